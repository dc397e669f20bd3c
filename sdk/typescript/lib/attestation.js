/**
 * Sandbox attestations (docs/attestation.md): the DSSE envelope the server signed (ed25519)
 * when a sandbox was created or claimed, the server's public key, and an offline check of
 * an envelope against a key — the same checks as `cleanroom attestation verify` (payload
 * type, a signature by that key over the DSSE pre-authentication encoding, validity window
 * with 60 s of clock skew). Trust only what {@link verifyAttestation} returns.
 */
import { createHash, createPublicKey, verify } from "node:crypto";
import { clientFor } from "./client.js";
import { errorFor } from "./errors.js";
import { CONNECT_KEYS, checkOptions } from "./options.js";
/** The DSSE `payloadType` of a Cleanroom attestation statement (version 1). */
export const PAYLOAD_TYPE = "application/vnd.cleanroom.attestation.v1+json";
const CLOCK_SKEW_MS = 60_000;
/** The attestation of `sandboxId` (`AttestationNotFoundError` when it has none). */
export async function sandboxAttestation(client, sandboxId) {
    const r = await client.call(client.attestations.getAttestation({ sandboxId }));
    return { envelopeJson: r.envelopeJson, statement: JSON.parse(r.statementJson), keyId: r.keyId };
}
/** The server's attestation public key: SPKI PEM and its key id. */
export async function attestationPublicKey(opts = {}) {
    checkOptions(opts, CONNECT_KEYS, "attestationPublicKey");
    const c = clientFor(opts);
    const r = await c.call(c.attestations.getAttestationPublicKey({}));
    return { publicKeyPem: r.publicKeyPem, keyId: r.keyId };
}
function invalid(m) {
    return errorFor("attestation_invalid", m);
}
/**
 * Check `envelopeJson` against `publicKeyPem` (SPKI PEM, ed25519) offline and return the
 * statement. Errors: `attestation_invalid`, `attestation_signature_invalid`,
 * `attestation_expired`, `attestation_not_yet_valid`.
 */
export function verifyAttestation(envelopeJson, publicKeyPem, now = new Date()) {
    let env;
    try {
        env = JSON.parse(envelopeJson);
    }
    catch (e) {
        throw invalid(`envelope: ${e.message}`);
    }
    if (env.payloadType !== PAYLOAD_TYPE)
        throw invalid(`payloadType ${JSON.stringify(env.payloadType)}, expected ${PAYLOAD_TYPE}`);
    if (typeof env.payload !== "string" || !Array.isArray(env.signatures))
        throw invalid("envelope: payload or signatures missing");
    const payload = Buffer.from(env.payload, "base64");
    const key = createPublicKey(publicKeyPem);
    if (key.asymmetricKeyType !== "ed25519")
        throw invalid("the public key is not an ed25519 key");
    const raw = key.export({ format: "der", type: "spki" }).subarray(-32);
    const keyId = `sha256:${createHash("sha256").update(raw).digest("hex")}`;
    const pae = Buffer.concat([
        Buffer.from(`DSSEv1 ${Buffer.byteLength(PAYLOAD_TYPE)} ${PAYLOAD_TYPE} ${payload.length} `),
        payload,
    ]);
    const signed = env.signatures.some((s) => s.keyid === keyId && typeof s.sig === "string" && verify(null, pae, key, Buffer.from(s.sig, "base64")));
    if (!signed)
        throw errorFor("attestation_signature_invalid", `no valid signature by ${keyId}`, "", { key_id: keyId });
    let st;
    try {
        st = JSON.parse(payload.toString("utf8"));
    }
    catch (e) {
        throw invalid(`statement: ${e.message}`);
    }
    if (st.version !== 1)
        throw invalid(`statement version ${String(st.version)}, expected 1`);
    const t = now.getTime();
    if (st.valid_until_unix_ms < st.created_at_unix_ms)
        throw invalid("valid_until is before created_at");
    if (t + CLOCK_SKEW_MS < st.created_at_unix_ms) {
        throw errorFor("attestation_not_yet_valid", `created at ${st.created_at_unix_ms} (unix ms), now is ${t}`);
    }
    if (t > st.valid_until_unix_ms)
        throw errorFor("attestation_expired", `expired at ${st.valid_until_unix_ms} (unix ms); now is ${t}`);
    return st;
}
