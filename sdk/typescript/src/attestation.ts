/**
 * Sandbox attestations (docs/attestation.md): the DSSE envelope the server signed (ed25519)
 * when a sandbox was created or claimed, the server's public key, and an offline check of
 * an envelope against a key — the same checks as `cleanroom attestation verify` (payload
 * type, a signature by that key over the DSSE pre-authentication encoding, validity window
 * with 60 s of clock skew). Trust only what {@link verifyAttestation} returns.
 */
import { createHash, createPublicKey, verify } from "node:crypto";
import { clientFor, type CleanroomClient, type ClientOptions } from "./client.js";
import { errorFor } from "./errors.js";
import { CONNECT_KEYS, checkOptions } from "./options.js";

/** The DSSE `payloadType` of a Cleanroom attestation statement (version 1). */
export const PAYLOAD_TYPE = "application/vnd.cleanroom.attestation.v1+json";
const CLOCK_SKEW_MS = 60_000;

/** What the server stated about a sandbox (snake_case, as signed). */
export interface AttestationStatement {
  version: number;
  sandbox_id: string;
  owner: string;
  policy_hash: string;
  /** Hash of the effective egress rules, in statements signed after a live change ({@link Sandbox.updateNetwork}). */
  effective_rules_hash?: string;
  image_digest: string;
  backend: string;
  pool_id: string;
  created_at_unix_ms: number;
  valid_until_unix_ms: number;
  [field: string]: unknown;
}

/** A sandbox's attestation as the server returns it. */
export interface Attestation {
  /** The DSSE envelope (JSON text): give it to {@link verifyAttestation}. */
  envelopeJson: string;
  /** The decoded statement, for display (unverified). */
  statement: AttestationStatement;
  /** `sha256:<hex>` of the signing key. */
  keyId: string;
}

/** The attestation of `sandboxId` (`AttestationNotFoundError` when it has none). */
export async function sandboxAttestation(client: CleanroomClient, sandboxId: string): Promise<Attestation> {
  const r = await client.call(client.attestations.getAttestation({ sandboxId }));
  return { envelopeJson: r.envelopeJson, statement: JSON.parse(r.statementJson) as AttestationStatement, keyId: r.keyId };
}

/** The server's attestation public key: SPKI PEM and its key id. */
export async function attestationPublicKey(opts: ClientOptions = {}): Promise<{ publicKeyPem: string; keyId: string }> {
  checkOptions(opts, CONNECT_KEYS, "attestationPublicKey");
  const c = clientFor(opts);
  const r = await c.call(c.attestations.getAttestationPublicKey({}));
  return { publicKeyPem: r.publicKeyPem, keyId: r.keyId };
}

function invalid(m: string) {
  return errorFor("attestation_invalid", m);
}

/**
 * Check `envelopeJson` against `publicKeyPem` (SPKI PEM, ed25519) offline and return the
 * statement. Errors: `attestation_invalid`, `attestation_signature_invalid`,
 * `attestation_expired`, `attestation_not_yet_valid`.
 */
export function verifyAttestation(envelopeJson: string, publicKeyPem: string, now: Date = new Date()): AttestationStatement {
  let env: { payloadType?: unknown; payload?: unknown; signatures?: unknown };
  try {
    env = JSON.parse(envelopeJson) as typeof env;
  } catch (e) {
    throw invalid(`envelope: ${(e as Error).message}`);
  }
  if (env.payloadType !== PAYLOAD_TYPE) throw invalid(`payloadType ${JSON.stringify(env.payloadType)}, expected ${PAYLOAD_TYPE}`);
  if (typeof env.payload !== "string" || !Array.isArray(env.signatures)) throw invalid("envelope: payload or signatures missing");
  const payload = Buffer.from(env.payload, "base64");
  const key = createPublicKey(publicKeyPem);
  if (key.asymmetricKeyType !== "ed25519") throw invalid("the public key is not an ed25519 key");
  const raw = key.export({ format: "der", type: "spki" }).subarray(-32);
  const keyId = `sha256:${createHash("sha256").update(raw).digest("hex")}`;
  const pae = Buffer.concat([
    Buffer.from(`DSSEv1 ${Buffer.byteLength(PAYLOAD_TYPE)} ${PAYLOAD_TYPE} ${payload.length} `),
    payload,
  ]);
  const signed = (env.signatures as { keyid?: unknown; sig?: unknown }[]).some(
    (s) => s.keyid === keyId && typeof s.sig === "string" && verify(null, pae, key, Buffer.from(s.sig, "base64")),
  );
  if (!signed) throw errorFor("attestation_signature_invalid", `no valid signature by ${keyId}`, "", { key_id: keyId });
  let st: AttestationStatement;
  try {
    st = JSON.parse(payload.toString("utf8")) as AttestationStatement;
  } catch (e) {
    throw invalid(`statement: ${(e as Error).message}`);
  }
  if (st.version !== 1) throw invalid(`statement version ${String(st.version)}, expected 1`);
  const t = now.getTime();
  if (st.valid_until_unix_ms < st.created_at_unix_ms) throw invalid("valid_until is before created_at");
  if (t + CLOCK_SKEW_MS < st.created_at_unix_ms) {
    throw errorFor("attestation_not_yet_valid", `created at ${st.created_at_unix_ms} (unix ms), now is ${t}`);
  }
  if (t > st.valid_until_unix_ms) throw errorFor("attestation_expired", `expired at ${st.valid_until_unix_ms} (unix ms); now is ${t}`);
  return st;
}
