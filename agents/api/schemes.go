package api

import kernel "github.com/trustd/trustd/platform/http"

// The texts of Agent Trust's two security schemes in the contract: the
// transport renders every scheme, and this area, which verifies the
// signatures (agents/), says what they are (kernel.Area.Schemes).

// schemes describe the agent_signature and agent_http_signature schemes.
var schemes = map[kernel.Auth]string{kernel.AuthAgent: hmacSigDoc, kernel.AuthAgentHTTPSig: httpSigDoc}

// hmacSigDoc is the contract's description of the X-Service-* HMAC
// scheme (agents.Sign).
const hmacSigDoc = "A signed agent request. Headers: X-Service-Agent (agent_id, UUID), X-Service-Timestamp (Unix seconds, exactly 10 ASCII digits, within ±300 s of the server clock), X-Service-Nonce (16 to 128 characters of A-Z a-z 0-9 . _ ~ -, never reused by the agent), X-Service-Signature = \"v1=\" + lowercase hex of HMAC-SHA-256(key = the ASCII bytes of the agent's secret, message = timestamp + \"\\n\" + nonce + \"\\n\" + the exact raw body bytes). Example: secret \"secret\", timestamp 1700000000, nonce 0123456789abcdef, body {\"a\":1} sign to v1=408efeeeb6cac7fbcb94b94dd873c3df9dbea56f20e407c0948ba408586aaca8. The body is verified before it is decoded, and decoded strictly."

// httpSigDoc is the contract's description of the RFC 9421 scheme
// (agents/DESIGN.md, "Signature scheme v2"); agents/httpsig_test.go pins
// the test vector.
const httpSigDoc = "An agent with a registered ed25519_public_key may sign with HTTP Message Signatures (RFC 9421) in the Web Bot Auth profile instead of the X-Service-* headers (sending both is agent-signature-ambiguous). " +
	"Headers: Content-Digest (RFC 9530) = sha-256=:<standard base64 of SHA-256(raw body)>: (sha-512 also accepted; every one sent must match); " +
	"Signature-Input = <label>=(<components>);created=<Unix s>;expires=<Unix s>;keyid=\"<agent_id>\";nonce=\"<nonce>\";alg=\"ed25519\";tag=\"web-bot-auth\" (alg optional, no other parameter; exactly one signature tagged web-bot-auth, the label is free); " +
	"Signature = <label>=:<standard base64 of the 64-byte Ed25519 signature>:. " +
	"Two profiles, set per agent with httpsig_profile. web-bot-auth (the default) is the Web Bot Auth draft: the components must include \"@authority\" (the Host header lowercased, without :80 or :443) and \"signature-agent\" when a Signature-Agent header is sent; a covered content-digest must match the body, and a body not covered by the signature is not authenticated. " +
	"strict also requires \"@path\" (the request path as sent, without the query) and \"content-digest\" when there is a body, so the signature binds the operation and the body. Others may be added in both. " +
	"keyid is the agent_id (a UUID) or, in the web-bot-auth profile, the RFC 7638 JWK thumbprint of the agent's key (web-bot-auth's signerFromJWK) sent with the header X-Service-Workspace: <workspace_id>; a thumbprint is looked up only among that workspace's agents, so registering another tenant's public key captures nothing, and one naming two agents of the workspace is refused. " +
	"nonce: 16 to 128 characters of A-Z a-z 0-9 + / = . _ ~ - (web-bot-auth's 64-byte base64 nonces fit), single use per agent in the same store as X-Service-Nonce. " +
	"Time, with the same tolerance as X-Service-Timestamp (±300 s): created within ±tolerance of the server clock, created < expires <= created + tolerance, and the server clock before expires. " +
	"Signature base (RFC 9421 section 2.5): for each component in order a line \"<name>\": <value>, then \"@signature-params\": <the Signature-Input member value>, lines joined by a line feed, no final line feed; the Ed25519 signature is over its bytes. " +
	"Test vector: the RFC 9421 B.1.4 test key (private d = n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU, public x = JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs, base64url), agent_id 6d1f2c3a-8b4e-4f5a-9c6d-7e8f9a0b1c2d, POST to Host trustd.example, path /v1/agents/approval/status, body {\"approval_id\":\"3f1e2d4c-5b6a-4798-8a7b-6c5d4e3f2a1b\"}, created 1700000000, expires 1700000300, nonce 0123456789abcdef0123456789abcdef give " +
	"Content-Digest: sha-256=:uTYIDQWJGwhg3en0kvlzNNjCFSwFLYVmUZ6l1dFEez0=: and " +
	"Signature-Input: sig1=(\"@authority\" \"@path\" \"content-digest\");created=1700000000;expires=1700000300;keyid=\"6d1f2c3a-8b4e-4f5a-9c6d-7e8f9a0b1c2d\";nonce=\"0123456789abcdef0123456789abcdef\";alg=\"ed25519\";tag=\"web-bot-auth\" and " +
	"Signature: sig1=:JnzDsWIHSDIkUkcpjyTAbqccnPVn2YBO1p92QG8WD7DsThEX7L9hLMuuY1lr08WNUXQgUwdrphNVlbogf3D/CA==:. " +
	"Failures: agent-httpsig-* codes, agent-unknown, agent-suspended, agent-nonce-reused (see ApiError)."
