package trust

// Level is a rung of the assurance ladder. Levels compare by rank, never
// by name: a proof of higher assurance satisfies a lower requirement, as
// RFC 9470 step-up reads acr values.
type Level uint8

// The ladder. LevelNone is what a proof of presence without identity (a
// human-verification widget token) achieves: it satisfies only a request
// that asks for no assurance.
const (
	LevelNone Level = iota
	LevelDocumentOnly
	LevelStandard
	LevelHigh
)

var levelNames = [...]string{"none", "document_only", "standard", "high"}

// LevelNames lists the ladder bottom-up, for the contract.
func LevelNames() []string { return append([]string(nil), levelNames[:]...) }

// String is the level's wire name.
func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return ""
}

// ParseLevel returns the level called name. The empty name is LevelNone
// (nothing requested).
func ParseLevel(name string) (Level, bool) {
	if name == "" {
		return LevelNone, true
	}
	for i, n := range levelNames {
		if n == name {
			return Level(i), true
		}
	}
	return 0, false
}

// Satisfies reports whether a proof achieving l meets a requirement of
// want.
func (l Level) Satisfies(want Level) bool { return l >= want }
