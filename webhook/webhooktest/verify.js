// Verifies Standard Webhooks signatures with the reference library
// (npm standardwebhooks). Input: JSON lines {secret, id, timestamp,
// signature, body}. Output: one JSON line {verified, failed, errors}.
const { Webhook } = require("standardwebhooks");
const lines = require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean);
let verified = 0, failed = 0;
const errors = [];
for (const line of lines) {
  const m = JSON.parse(line);
  try {
    new Webhook(m.secret).verify(m.body, {
      "webhook-id": m.id, "webhook-timestamp": m.timestamp, "webhook-signature": m.signature,
    });
    verified++;
  } catch (e) {
    failed++;
    if (errors.length < 5) errors.push(m.id + ": " + e.message);
  }
}
console.log(JSON.stringify({ verified, failed, errors }));
