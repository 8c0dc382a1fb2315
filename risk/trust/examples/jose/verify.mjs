// Verifies one trustd decision receipt offline, as a customer's backend
// would with panva's jose: the JWKS fetched from the node, the receipt's
// kid and alg matched against it, issuer and audience checked.
//
// stdin: {"jwks_url": "...", "receipt": "...", "audience": "...", "algorithms": ["Ed25519"]}
// stdout: {"ok": true, "alg": "...", "kid": "...", "claims": {...}} or {"ok": false, "code": "...", "error": "..."}
import { createRemoteJWKSet, jwtVerify } from 'jose';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const req = JSON.parse(input);
const jwks = createRemoteJWKSet(new URL(req.jwks_url));
try {
  const { payload, protectedHeader } = await jwtVerify(req.receipt, jwks, {
    issuer: 'trustd',
    audience: req.audience,
    algorithms: req.algorithms,
  });
  console.log(JSON.stringify({ ok: true, alg: protectedHeader.alg, kid: protectedHeader.kid, claims: payload }));
} catch (err) {
  console.log(JSON.stringify({ ok: false, code: err.code || '', error: String(err.message || err) }));
}
