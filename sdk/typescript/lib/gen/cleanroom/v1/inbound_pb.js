// Inbound traffic into sandboxes (docs/network.md "Inbound"): a port of a sandbox exposed
// as a URL served by the Cleanroom server itself (`/_sandbox/<exposure-id>/…` on its
// listeners), reachable with the owner's API credentials or the exposure's signed,
// expiring token. Raw TCP (`cleanroom port-forward`) is an HTTP/1.1 Upgrade on
// `/_portforward/<sandbox-id>/<port>`, not an RPC.
import { fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
/**
 * Describes the file cleanroom/v1/inbound.proto.
 */
export const file_cleanroom_v1_inbound = /*@__PURE__*/ fileDesc("ChpjbGVhbnJvb20vdjEvaW5ib3VuZC5wcm90bxIMY2xlYW5yb29tLnYxIpgBCg9TYW5kYm94RXhwb3N1cmUSCgoCaWQYASABKAkSEgoKc2FuZGJveF9pZBgCIAEoCRIMCgRwb3J0GAMgASgNEgwKBHBhdGgYBCABKAkSDQoFdG9rZW4YBSABKAkSEgoKY3JlYXRlZF9hdBgGIAEoAxISCgpleHBpcmVzX2F0GAcgASgDEhIKCmNyZWF0ZWRfYnkYCCABKAkiUQoYRXhwb3NlU2FuZGJveFBvcnRSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSDAoEcG9ydBgCIAEoDRITCgt0dGxfc2Vjb25kcxgDIAEoBCJMChlFeHBvc2VTYW5kYm94UG9ydFJlc3BvbnNlEi8KCGV4cG9zdXJlGAEgASgLMh0uY2xlYW5yb29tLnYxLlNhbmRib3hFeHBvc3VyZSJAChpVbmV4cG9zZVNhbmRib3hQb3J0UmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEg4KBnRhcmdldBgCIAEoCSJNChtVbmV4cG9zZVNhbmRib3hQb3J0UmVzcG9uc2USLgoHcmVtb3ZlZBgBIAMoCzIdLmNsZWFucm9vbS52MS5TYW5kYm94RXhwb3N1cmUiMQobTGlzdFNhbmRib3hFeHBvc3VyZXNSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkiUAocTGlzdFNhbmRib3hFeHBvc3VyZXNSZXNwb25zZRIwCglleHBvc3VyZXMYASADKAsyHS5jbGVhbnJvb20udjEuU2FuZGJveEV4cG9zdXJlMtECCg5JbmJvdW5kU2VydmljZRJkChFFeHBvc2VTYW5kYm94UG9ydBImLmNsZWFucm9vbS52MS5FeHBvc2VTYW5kYm94UG9ydFJlcXVlc3QaJy5jbGVhbnJvb20udjEuRXhwb3NlU2FuZGJveFBvcnRSZXNwb25zZRJqChNVbmV4cG9zZVNhbmRib3hQb3J0EiguY2xlYW5yb29tLnYxLlVuZXhwb3NlU2FuZGJveFBvcnRSZXF1ZXN0GikuY2xlYW5yb29tLnYxLlVuZXhwb3NlU2FuZGJveFBvcnRSZXNwb25zZRJtChRMaXN0U2FuZGJveEV4cG9zdXJlcxIpLmNsZWFucm9vbS52MS5MaXN0U2FuZGJveEV4cG9zdXJlc1JlcXVlc3QaKi5jbGVhbnJvb20udjEuTGlzdFNhbmRib3hFeHBvc3VyZXNSZXNwb25zZWIGcHJvdG8z");
/**
 * Describes the message cleanroom.v1.SandboxExposure.
 * Use `create(SandboxExposureSchema)` to create a new message.
 */
export const SandboxExposureSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 0);
/**
 * Describes the message cleanroom.v1.ExposeSandboxPortRequest.
 * Use `create(ExposeSandboxPortRequestSchema)` to create a new message.
 */
export const ExposeSandboxPortRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 1);
/**
 * Describes the message cleanroom.v1.ExposeSandboxPortResponse.
 * Use `create(ExposeSandboxPortResponseSchema)` to create a new message.
 */
export const ExposeSandboxPortResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 2);
/**
 * Describes the message cleanroom.v1.UnexposeSandboxPortRequest.
 * Use `create(UnexposeSandboxPortRequestSchema)` to create a new message.
 */
export const UnexposeSandboxPortRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 3);
/**
 * Describes the message cleanroom.v1.UnexposeSandboxPortResponse.
 * Use `create(UnexposeSandboxPortResponseSchema)` to create a new message.
 */
export const UnexposeSandboxPortResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 4);
/**
 * Describes the message cleanroom.v1.ListSandboxExposuresRequest.
 * Use `create(ListSandboxExposuresRequestSchema)` to create a new message.
 */
export const ListSandboxExposuresRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 5);
/**
 * Describes the message cleanroom.v1.ListSandboxExposuresResponse.
 * Use `create(ListSandboxExposuresResponseSchema)` to create a new message.
 */
export const ListSandboxExposuresResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_inbound, 6);
/**
 * @generated from service cleanroom.v1.InboundService
 */
export const InboundService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_inbound, 0);
