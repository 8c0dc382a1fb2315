// An unmodified reCAPTCHA v3 backend: better-auth with its captcha plugin
// (provider google-recaptcha, minScore 0.5, the plugin's default), whose
// verify URL is pointed at a trustd node's reCAPTCHA dialect. One email
// sign-up arrives through a proxy (X-Forwarded-For names the visitor as
// the proxy saw it), carrying the widget's token in X-Captcha-Response.
// http/verify_recaptcha_vendor_test.go runs it against a node.
//
// Usage: VERIFY_URL=http://127.0.0.1:8080/v1/recaptcha/api/siteverify \
//   SECRET=<site secret> TOKEN=<widget token> FORWARDED_FOR=198.51.100.99 node signup.mjs
// Prints one JSON line: {"status": <HTTP status>, "body": "<answer>"}.
import { betterAuth } from "better-auth";
import { memoryAdapter } from "better-auth/adapters/memory";
import { captcha } from "better-auth/plugins";

const auth = betterAuth({
  baseURL: "http://localhost:3000",
  secret: "trustd-test-secret-trustd-test-secret",
  database: memoryAdapter({ user: [], session: [], account: [], verification: [] }),
  emailAndPassword: { enabled: true },
  logger: { disabled: true },
  plugins: [
    captcha({
      provider: "google-recaptcha",
      secretKey: process.env.SECRET,
      siteVerifyURLOverride: process.env.VERIFY_URL,
      minScore: 0.5,
    }),
  ],
});

const headers = { "content-type": "application/json", "x-captcha-response": process.env.TOKEN };
if (process.env.FORWARDED_FOR) {
  headers["x-forwarded-for"] = process.env.FORWARDED_FOR;
}
const res = await auth.handler(
  new Request("http://localhost:3000/api/auth/sign-up/email", {
    method: "POST",
    headers,
    body: JSON.stringify({ email: "ada@example.com", password: "correct horse battery staple", name: "Ada" }),
  }),
);
console.log(JSON.stringify({ status: res.status, body: await res.text() }));
