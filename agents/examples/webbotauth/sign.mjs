// Signs a trustd agent request with Cloudflare's web-bot-auth package
// (RFC 9421 HTTP Message Signatures, Ed25519, tag "web-bot-auth") and, with
// --send, sends it. http/agents_webbotauth_test.go runs it against a node.
//
// Usage: TRUSTD_URL=http://127.0.0.1:8080 AGENT_ID=<uuid> \
//   AGENT_JWK='{"kty":"OKP","crv":"Ed25519","d":"…","x":"…"}' \
//   node sign.mjs [--send] /v1/agents/decision '{"request_id":"r1",...}'
// Optional: SIGNATURE_AGENT='"https://agent.example"' adds (and signs) a
// Signature-Agent header.
// Prints one JSON line: {"headers":{…}} and, with --send, "status" and "body".
import { createHash } from "node:crypto";
import { signatureHeaders, SIGNATURE_AGENT_HEADER } from "web-bot-auth";
import { Ed25519Signer } from "web-bot-auth/crypto";

const args = process.argv.slice(2);
const send = args[0] === "--send";
const [path, body] = send ? args.slice(1) : args;
const url = process.env.TRUSTD_URL + path;
const bytes = Buffer.from(body, "utf8"); // the exact bytes sent below

// keyid is the agent_id (not the JWK thumbprint web-bot-auth's fromJWK
// would use): trustd finds the Ed25519 key through the agent.
const key = await crypto.subtle.importKey("jwk", JSON.parse(process.env.AGENT_JWK), { name: "Ed25519" }, false, ["sign"]);
const signer = new Ed25519Signer(process.env.AGENT_ID, key);

const headers = {
  "Content-Type": "application/json",
  // RFC 9530: trustd requires the body's digest to be signed.
  "Content-Digest": "sha-256=:" + createHash("sha256").update(bytes).digest("base64") + ":",
};
const components = ["@authority", "@path", "content-digest"];
if (process.env.SIGNATURE_AGENT) {
  headers["Signature-Agent"] = process.env.SIGNATURE_AGENT;
  components.push(SIGNATURE_AGENT_HEADER);
}
const now = new Date();
const sig = await signatureHeaders({ method: "POST", url, headers }, signer, {
  created: now,
  expires: new Date(now.getTime() + 60_000),
  components,
});
Object.assign(headers, sig);

const out = { headers };
if (send) {
  const res = await fetch(url, { method: "POST", headers, body: bytes });
  out.status = res.status;
  out.body = await res.text();
}
console.log(JSON.stringify(out));
