// Egress verdicts that ask (docs/approvals.md): a sandbox whose policy says `ask` holds a
// new connection, emits an `egress.pending` event with a request id, and waits for
// DecideEgress from the sandbox's owner or an admin (others get `sandbox_not_found`),
// at most the approval timeout (then it is denied with `approval_timeout`).
import { enumDesc, fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
import { file_google_protobuf_timestamp } from "@bufbuild/protobuf/wkt";
/**
 * Describes the file cleanroom/v1/approvals.proto.
 */
export const file_cleanroom_v1_approvals = /*@__PURE__*/ fileDesc("ChxjbGVhbnJvb20vdjEvYXBwcm92YWxzLnByb3RvEgxjbGVhbnJvb20udjEixQEKDUVncmVzc1JlcXVlc3QSEgoKcmVxdWVzdF9pZBgBIAEoCRISCgpzYW5kYm94X2lkGAIgASgJEgwKBGhvc3QYAyABKAkSDAoEcG9ydBgEIAEoDRIQCghwcm90b2NvbBgFIAEoCRIuCgpjcmVhdGVkX2F0GAYgASgLMhouZ29vZ2xlLnByb3RvYnVmLlRpbWVzdGFtcBIuCgpleHBpcmVzX2F0GAcgASgLMhouZ29vZ2xlLnByb3RvYnVmLlRpbWVzdGFtcCIvChlMaXN0RWdyZXNzUmVxdWVzdHNSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkibgoaTGlzdEVncmVzc1JlcXVlc3RzUmVzcG9uc2USLQoIcmVxdWVzdHMYASADKAsyGy5jbGVhbnJvb20udjEuRWdyZXNzUmVxdWVzdBIQCghhcHByb3ZlZBgCIAMoCRIPCgdyZWZ1c2VkGAMgAygJIpsBChNEZWNpZGVFZ3Jlc3NSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSEgoKcmVxdWVzdF9pZBgCIAEoCRIsCgd2ZXJkaWN0GAMgASgOMhsuY2xlYW5yb29tLnYxLkVncmVzc1ZlcmRpY3QSLgoIcmVtZW1iZXIYBCABKA4yHC5jbGVhbnJvb20udjEuRWdyZXNzUmVtZW1iZXIiRAoURGVjaWRlRWdyZXNzUmVzcG9uc2USLAoHcmVxdWVzdBgBIAEoCzIbLmNsZWFucm9vbS52MS5FZ3Jlc3NSZXF1ZXN0KmIKDUVncmVzc1ZlcmRpY3QSHgoaRUdSRVNTX1ZFUkRJQ1RfVU5TUEVDSUZJRUQQABIYChRFR1JFU1NfVkVSRElDVF9BTExPVxABEhcKE0VHUkVTU19WRVJESUNUX0RFTlkQAipoCg5FZ3Jlc3NSZW1lbWJlchIfChtFR1JFU1NfUkVNRU1CRVJfVU5TUEVDSUZJRUQQABIYChRFR1JFU1NfUkVNRU1CRVJfT05DRRABEhsKF0VHUkVTU19SRU1FTUJFUl9TQU5EQk9YEAIy0QEKD0FwcHJvdmFsU2VydmljZRJnChJMaXN0RWdyZXNzUmVxdWVzdHMSJy5jbGVhbnJvb20udjEuTGlzdEVncmVzc1JlcXVlc3RzUmVxdWVzdBooLmNsZWFucm9vbS52MS5MaXN0RWdyZXNzUmVxdWVzdHNSZXNwb25zZRJVCgxEZWNpZGVFZ3Jlc3MSIS5jbGVhbnJvb20udjEuRGVjaWRlRWdyZXNzUmVxdWVzdBoiLmNsZWFucm9vbS52MS5EZWNpZGVFZ3Jlc3NSZXNwb25zZWIGcHJvdG8z", [file_google_protobuf_timestamp]);
/**
 * Describes the message cleanroom.v1.EgressRequest.
 * Use `create(EgressRequestSchema)` to create a new message.
 */
export const EgressRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_approvals, 0);
/**
 * Describes the message cleanroom.v1.ListEgressRequestsRequest.
 * Use `create(ListEgressRequestsRequestSchema)` to create a new message.
 */
export const ListEgressRequestsRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_approvals, 1);
/**
 * Describes the message cleanroom.v1.ListEgressRequestsResponse.
 * Use `create(ListEgressRequestsResponseSchema)` to create a new message.
 */
export const ListEgressRequestsResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_approvals, 2);
/**
 * Describes the message cleanroom.v1.DecideEgressRequest.
 * Use `create(DecideEgressRequestSchema)` to create a new message.
 */
export const DecideEgressRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_approvals, 3);
/**
 * Describes the message cleanroom.v1.DecideEgressResponse.
 * Use `create(DecideEgressResponseSchema)` to create a new message.
 */
export const DecideEgressResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_approvals, 4);
/**
 * @generated from enum cleanroom.v1.EgressVerdict
 */
export var EgressVerdict;
(function (EgressVerdict) {
    /**
     * @generated from enum value: EGRESS_VERDICT_UNSPECIFIED = 0;
     */
    EgressVerdict[EgressVerdict["UNSPECIFIED"] = 0] = "UNSPECIFIED";
    /**
     * @generated from enum value: EGRESS_VERDICT_ALLOW = 1;
     */
    EgressVerdict[EgressVerdict["ALLOW"] = 1] = "ALLOW";
    /**
     * @generated from enum value: EGRESS_VERDICT_DENY = 2;
     */
    EgressVerdict[EgressVerdict["DENY"] = 2] = "DENY";
})(EgressVerdict || (EgressVerdict = {}));
/**
 * Describes the enum cleanroom.v1.EgressVerdict.
 */
export const EgressVerdictSchema = /*@__PURE__*/ enumDesc(file_cleanroom_v1_approvals, 0);
/**
 * @generated from enum cleanroom.v1.EgressRemember
 */
export var EgressRemember;
(function (EgressRemember) {
    /**
     * Same as ONCE.
     *
     * @generated from enum value: EGRESS_REMEMBER_UNSPECIFIED = 0;
     */
    EgressRemember[EgressRemember["UNSPECIFIED"] = 0] = "UNSPECIFIED";
    /**
     * This request only (and the connections waiting on it).
     *
     * @generated from enum value: EGRESS_REMEMBER_ONCE = 1;
     */
    EgressRemember[EgressRemember["ONCE"] = 1] = "ONCE";
    /**
     * Every later connection of the sandbox to the same host:port gets the same answer
     * without asking; shown in GetSandbox as approved/refused egress.
     *
     * @generated from enum value: EGRESS_REMEMBER_SANDBOX = 2;
     */
    EgressRemember[EgressRemember["SANDBOX"] = 2] = "SANDBOX";
})(EgressRemember || (EgressRemember = {}));
/**
 * Describes the enum cleanroom.v1.EgressRemember.
 */
export const EgressRememberSchema = /*@__PURE__*/ enumDesc(file_cleanroom_v1_approvals, 1);
/**
 * @generated from service cleanroom.v1.ApprovalService
 */
export const ApprovalService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_approvals, 0);
