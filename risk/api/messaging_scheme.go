package api

// messagingSigDoc describes the messaging-signature scheme, which
// risk/messaging verifies, for the contract (kernel.Area.Schemes).
const messagingSigDoc = "A signed messaging-provider request (preflight, delivery events). Headers: X-Service-Workspace (the workspace_id whose messaging secret signs), X-Service-Timestamp (Unix seconds, exactly 10 ASCII digits, within ±300 s of the server clock), " +
	"X-Service-Nonce (16 to 128 characters of A-Z a-z 0-9 . _ ~ -, single use per workspace: a replay answers messaging-nonce-reused), X-Service-Signature = \"v1=\" + lowercase hex of HMAC-SHA-256(key = the ASCII bytes of the workspace's messaging secret, " +
	"message = timestamp + \"\\n\" + nonce + \"\\n\" + the exact raw body bytes): the Agent Trust HMAC signing string. The signature is verified before the body is decoded, and the body is decoded strictly; fields that would carry a one-time code or a message text (code, otp, message, body, text, …) are refused with messaging-content-refused."
