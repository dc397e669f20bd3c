import type { GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/attestation.proto.
 */
export declare const file_cleanroom_v1_attestation: GenFile;
/**
 * @generated from message cleanroom.v1.GetAttestationRequest
 */
export type GetAttestationRequest = Message<"cleanroom.v1.GetAttestationRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
};
/**
 * Describes the message cleanroom.v1.GetAttestationRequest.
 * Use `create(GetAttestationRequestSchema)` to create a new message.
 */
export declare const GetAttestationRequestSchema: GenMessage<GetAttestationRequest>;
/**
 * @generated from message cleanroom.v1.GetAttestationResponse
 */
export type GetAttestationResponse = Message<"cleanroom.v1.GetAttestationResponse"> & {
    /**
     * The DSSE envelope (JSON): payloadType, base64 payload (the canonical statement), signatures.
     *
     * @generated from field: string envelope_json = 1;
     */
    envelopeJson: string;
    /**
     * The decoded statement (JSON), for display; trust only what `verify` returns.
     *
     * @generated from field: string statement_json = 2;
     */
    statementJson: string;
    /**
     * `sha256:<hex>` of the signing key.
     *
     * @generated from field: string key_id = 3;
     */
    keyId: string;
};
/**
 * Describes the message cleanroom.v1.GetAttestationResponse.
 * Use `create(GetAttestationResponseSchema)` to create a new message.
 */
export declare const GetAttestationResponseSchema: GenMessage<GetAttestationResponse>;
/**
 * @generated from message cleanroom.v1.GetAttestationPublicKeyRequest
 */
export type GetAttestationPublicKeyRequest = Message<"cleanroom.v1.GetAttestationPublicKeyRequest"> & {};
/**
 * Describes the message cleanroom.v1.GetAttestationPublicKeyRequest.
 * Use `create(GetAttestationPublicKeyRequestSchema)` to create a new message.
 */
export declare const GetAttestationPublicKeyRequestSchema: GenMessage<GetAttestationPublicKeyRequest>;
/**
 * @generated from message cleanroom.v1.GetAttestationPublicKeyResponse
 */
export type GetAttestationPublicKeyResponse = Message<"cleanroom.v1.GetAttestationPublicKeyResponse"> & {
    /**
     * SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`).
     *
     * @generated from field: string public_key_pem = 1;
     */
    publicKeyPem: string;
    /**
     * @generated from field: string key_id = 2;
     */
    keyId: string;
};
/**
 * Describes the message cleanroom.v1.GetAttestationPublicKeyResponse.
 * Use `create(GetAttestationPublicKeyResponseSchema)` to create a new message.
 */
export declare const GetAttestationPublicKeyResponseSchema: GenMessage<GetAttestationPublicKeyResponse>;
/**
 * Statements the server signed about its sandboxes, and the key that checks them.
 * `cleanroom attestation verify` needs neither this service nor the server: the public key
 * and the envelope are enough.
 *
 * @generated from service cleanroom.v1.AttestationService
 */
export declare const AttestationService: GenService<{
    /**
     * The attestation made when the sandbox was created or claimed. Errors:
     * `sandbox_not_found`, `attestation_not_found`.
     *
     * @generated from rpc cleanroom.v1.AttestationService.GetAttestation
     */
    getAttestation: {
        methodKind: "unary";
        input: typeof GetAttestationRequestSchema;
        output: typeof GetAttestationResponseSchema;
    };
    /**
     * The server's ed25519 public key (generated once, kept in the state dir).
     *
     * @generated from rpc cleanroom.v1.AttestationService.GetAttestationPublicKey
     */
    getAttestationPublicKey: {
        methodKind: "unary";
        input: typeof GetAttestationPublicKeyRequestSchema;
        output: typeof GetAttestationPublicKeyResponseSchema;
    };
}>;
