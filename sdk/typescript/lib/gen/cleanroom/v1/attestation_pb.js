// Signed sandbox attestations (issue 11, seed 002 AttestationService).
import { fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
/**
 * Describes the file cleanroom/v1/attestation.proto.
 */
export const file_cleanroom_v1_attestation = /*@__PURE__*/ fileDesc("Ch5jbGVhbnJvb20vdjEvYXR0ZXN0YXRpb24ucHJvdG8SDGNsZWFucm9vbS52MSIrChVHZXRBdHRlc3RhdGlvblJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCSJXChZHZXRBdHRlc3RhdGlvblJlc3BvbnNlEhUKDWVudmVsb3BlX2pzb24YASABKAkSFgoOc3RhdGVtZW50X2pzb24YAiABKAkSDgoGa2V5X2lkGAMgASgJIiAKHkdldEF0dGVzdGF0aW9uUHVibGljS2V5UmVxdWVzdCJJCh9HZXRBdHRlc3RhdGlvblB1YmxpY0tleVJlc3BvbnNlEhYKDnB1YmxpY19rZXlfcGVtGAEgASgJEg4KBmtleV9pZBgCIAEoCTLpAQoSQXR0ZXN0YXRpb25TZXJ2aWNlElsKDkdldEF0dGVzdGF0aW9uEiMuY2xlYW5yb29tLnYxLkdldEF0dGVzdGF0aW9uUmVxdWVzdBokLmNsZWFucm9vbS52MS5HZXRBdHRlc3RhdGlvblJlc3BvbnNlEnYKF0dldEF0dGVzdGF0aW9uUHVibGljS2V5EiwuY2xlYW5yb29tLnYxLkdldEF0dGVzdGF0aW9uUHVibGljS2V5UmVxdWVzdBotLmNsZWFucm9vbS52MS5HZXRBdHRlc3RhdGlvblB1YmxpY0tleVJlc3BvbnNlYgZwcm90bzM");
/**
 * Describes the message cleanroom.v1.GetAttestationRequest.
 * Use `create(GetAttestationRequestSchema)` to create a new message.
 */
export const GetAttestationRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_attestation, 0);
/**
 * Describes the message cleanroom.v1.GetAttestationResponse.
 * Use `create(GetAttestationResponseSchema)` to create a new message.
 */
export const GetAttestationResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_attestation, 1);
/**
 * Describes the message cleanroom.v1.GetAttestationPublicKeyRequest.
 * Use `create(GetAttestationPublicKeyRequestSchema)` to create a new message.
 */
export const GetAttestationPublicKeyRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_attestation, 2);
/**
 * Describes the message cleanroom.v1.GetAttestationPublicKeyResponse.
 * Use `create(GetAttestationPublicKeyResponseSchema)` to create a new message.
 */
export const GetAttestationPublicKeyResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_attestation, 3);
/**
 * Statements the server signed about its sandboxes, and the key that checks them.
 * `cleanroom attestation verify` needs neither this service nor the server: the public key
 * and the envelope are enough.
 *
 * @generated from service cleanroom.v1.AttestationService
 */
export const AttestationService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_attestation, 0);
