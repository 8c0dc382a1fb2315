package api_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/trustd/trustd/agents"

	"github.com/trustd/trustd/node/nodetest"
)

var agentNonceSeq atomic.Int64

// signedAgent signs requests as a registered agent (the approvals the
// console's approver role decides start as an agent's decision request).
type signedAgent struct {
	tn     *nodetest.Node
	id     string
	secret string
}

// send signs body with the agent's secret (the documented scheme) and
// posts it.
func (a signedAgent) send(path, body string) nodetest.Response {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	nonce := fmt.Sprintf("nonce-%016d", agentNonceSeq.Add(1))
	return a.tn.Do("POST", "/v1"+path, "", body,
		agents.HeaderAgent, a.id, agents.HeaderTimestamp, ts, agents.HeaderNonce, nonce,
		agents.HeaderSignature, agents.Sign([]byte(a.secret), ts, nonce, []byte(body)))
}
