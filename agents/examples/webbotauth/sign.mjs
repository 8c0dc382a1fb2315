// Signs a trustd agent request with Cloudflare's web-bot-auth package
// (RFC 9421 HTTP Message Signatures, Ed25519, tag "web-bot-auth") and, with
// --send, sends it. http/agents_webbotauth_test.go runs it against a node.
//
// Usage: TRUSTD_URL=http://127.0.0.1:8080 AGENT_ID=<uuid> \
//   AGENT_JWK='{"kty":"OKP","crv":"Ed25519","d":"…","x":"…"}' \
//   node sign.mjs [--send] /v1/agents/decision '{"request_id":"r1",...}'
// Optional: SIGNATURE_AGENT='"https://agent.example"' adds (and signs) a
// Signature-Agent header; WBA_DEFAULTS=1 (with WORKSPACE_ID) signs with
// web-bot-auth's defaults (see below).
// Prints one JSON line: {"headers":{…}} and, with --send, "status" and "body".
import { createHash } from "node:crypto";
import { signatureHeaders, SIGNATURE_AGENT_HEADER } from "web-bot-auth";
import { Ed25519Signer, signerFromJWK } from "web-bot-auth/crypto";

const args = process.argv.slice(2);
const send = args[0] === "--send";
const [path, body] = send ? args.slice(1) : args;
const url = process.env.TRUSTD_URL + path;
const bytes = Buffer.from(body, "utf8"); // the exact bytes sent below

// Two ways to sign:
// - WBA_DEFAULTS=1: web-bot-auth exactly as its README shows:
//   signerFromJWK (keyid = the key's RFC 7638 JWK thumbprint) and its
//   default components ("@authority", plus "signature-agent" when sent),
//   no Content-Digest. trustd looks the thumbprint up among the agents of
//   the workspace named in X-Service-Workspace (WORKSPACE_ID).
// - otherwise, the strict profile: keyid the agent_id and "@authority",
//   "@path" and "content-digest" covered, so the body is signed.
const jwk = JSON.parse(process.env.AGENT_JWK);
const defaults = process.env.WBA_DEFAULTS === "1";
const signer = defaults
  ? await signerFromJWK(jwk)
  : new Ed25519Signer(process.env.AGENT_ID, await crypto.subtle.importKey("jwk", jwk, { name: "Ed25519" }, false, ["sign"]));

const headers = { "Content-Type": "application/json" };
let components;
if (defaults) {
  if (process.env.WORKSPACE_ID) {
    headers["X-Service-Workspace"] = process.env.WORKSPACE_ID;
  }
} else {
  // RFC 9530: the strict profile requires the body's digest to be signed.
  headers["Content-Digest"] = "sha-256=:" + createHash("sha256").update(bytes).digest("base64") + ":";
  components = ["@authority", "@path", "content-digest"];
}
if (process.env.SIGNATURE_AGENT) {
  headers["Signature-Agent"] = process.env.SIGNATURE_AGENT;
  components?.push(SIGNATURE_AGENT_HEADER);
}
const now = new Date();
const params = { created: now, expires: new Date(now.getTime() + 60_000) };
if (components) {
  params.components = components;
}
const sig = await signatureHeaders({ method: "POST", url, headers }, signer, params);
Object.assign(headers, sig);

const out = { headers };
if (send) {
  const res = await fetch(url, { method: "POST", headers, body: bytes });
  out.status = res.status;
  out.body = await res.text();
}
console.log(JSON.stringify(out));
