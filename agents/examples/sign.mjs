// Minimal Node signer for trustd Agent Trust (HMAC v1), no dependencies.
// Usage: TRUSTD_URL=http://127.0.0.1:8080 AGENT_ID=<uuid> AGENT_SECRET=ags_… \
//   node sign.mjs /v1/agents/decision '{"request_id":"r1",...}'
import { createHmac, randomBytes } from "node:crypto";

const [path, body] = process.argv.slice(2);
const timestamp = String(Math.floor(Date.now() / 1000)); // exactly 10 digits
const nonce = randomBytes(24).toString("base64url"); // 32 chars of [A-Za-z0-9_-]
const mac = createHmac("sha256", Buffer.from(process.env.AGENT_SECRET, "ascii"))
  .update(`${timestamp}\n${nonce}\n`)
  .update(Buffer.from(body, "utf8")) // the exact bytes sent below
  .digest("hex");
const res = await fetch(process.env.TRUSTD_URL + path, {
  method: "POST",
  headers: {
    "Content-Type": "application/json",
    "X-Service-Agent": process.env.AGENT_ID,
    "X-Service-Timestamp": timestamp,
    "X-Service-Nonce": nonce,
    "X-Service-Signature": "v1=" + mac,
  },
  body: Buffer.from(body, "utf8"),
});
console.log(res.status, await res.text());
