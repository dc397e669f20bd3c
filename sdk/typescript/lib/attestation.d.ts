import { type CleanroomClient, type ClientOptions } from "./client.js";
/** The DSSE `payloadType` of a Cleanroom attestation statement (version 1). */
export declare const PAYLOAD_TYPE = "application/vnd.cleanroom.attestation.v1+json";
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
export declare function sandboxAttestation(client: CleanroomClient, sandboxId: string): Promise<Attestation>;
/** The server's attestation public key: SPKI PEM and its key id. */
export declare function attestationPublicKey(opts?: ClientOptions): Promise<{
    publicKeyPem: string;
    keyId: string;
}>;
/**
 * Check `envelopeJson` against `publicKeyPem` (SPKI PEM, ed25519) offline and return the
 * statement. Errors: `attestation_invalid`, `attestation_signature_invalid`,
 * `attestation_expired`, `attestation_not_yet_valid`.
 */
export declare function verifyAttestation(envelopeJson: string, publicKeyPem: string, now?: Date): AttestationStatement;
