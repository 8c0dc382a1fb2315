package load

// Kind classifies how one request ended.
type Kind uint8

const (
	// OK is an answer that was received and decoded.
	OK Kind = iota
	// Transport is a failure to send or to receive (refused, reset, timeout).
	Transport
	// Status is an answer with an unexpected HTTP status (or a protocol-level
	// error reply); Outcome.Status carries the code.
	Status
	// Decode is an answer whose body could not be parsed or lacked the field
	// the scenario checks.
	Decode
	// Exhausted means the worker has nothing left to send (for example every
	// pre-minted token was used). It is not a request: the goroutine stops.
	Exhausted
)

// Decision is what a successful answer said, counted so that a run whose
// requests all "succeed" with a wrong answer is visible.
type Decision uint8

const (
	// NoDecision is for answers that carry none (errors, baseline pings).
	NoDecision Decision = iota
	// Allow is a rate-limit "allow".
	Allow
	// Throttle is a rate-limit "throttle".
	Throttle
	// Reject is a rate-limit "reject".
	Reject
	// VerifySuccess is a siteverify answer with success true.
	VerifySuccess
	// VerifyFailure is a siteverify answer with success false.
	VerifyFailure
	// OtherDecision is a decision string the tool does not know.
	OtherDecision
	numDecisions
)

var decisionNames = [numDecisions]string{"none", "allow", "throttle", "reject", "verify-success", "verify-failure", "other"}

// String returns the decision's report name.
func (d Decision) String() string {
	if d < numDecisions {
		return decisionNames[d]
	}
	return "invalid"
}

// Outcome is the result of one Worker.Do.
type Outcome struct {
	// Op indexes Config.Ops: which operation of a mix this was.
	Op       uint8
	Kind     Kind
	Status   uint16
	Decision Decision
}

// Worker performs one request per Do call on resources it owns (a connection,
// a pre-allocated request). A Worker is used by one goroutine only. If it also
// implements io.Closer it is closed when its goroutine ends.
type Worker interface {
	Do() Outcome
}
