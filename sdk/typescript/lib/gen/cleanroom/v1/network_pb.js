// Live egress rules of a running sandbox (docs/network.md): allow and deny rules added while
// it runs, on top of its compiled policy, which never changes (policy_hash stays the
// policy's). The effective rule set has its own hash (`effective_rules_hash`), shown by
// GetSandbox, recorded in a `network.rules` event and in a freshly signed attestation.
import { fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
/**
 * Describes the file cleanroom/v1/network.proto.
 */
export const file_cleanroom_v1_network = /*@__PURE__*/ fileDesc("ChpjbGVhbnJvb20vdjEvbmV0d29yay5wcm90bxIMY2xlYW5yb29tLnYxImoKG1VwZGF0ZVNhbmRib3hOZXR3b3JrUmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEg0KBWFsbG93GAIgAygJEgwKBGRlbnkYAyADKAkSDQoFcmVzZXQYBCABKAgSCwoDY3V0GAUgASgIIngKHFVwZGF0ZVNhbmRib3hOZXR3b3JrUmVzcG9uc2USHAoUZWZmZWN0aXZlX3J1bGVzX2hhc2gYASABKAkSEgoKbGl2ZV9hbGxvdxgCIAMoCRIRCglsaXZlX2RlbnkYAyADKAkSEwoLcG9saWN5X2hhc2gYBCABKAkyfwoOTmV0d29ya1NlcnZpY2USbQoUVXBkYXRlU2FuZGJveE5ldHdvcmsSKS5jbGVhbnJvb20udjEuVXBkYXRlU2FuZGJveE5ldHdvcmtSZXF1ZXN0GiouY2xlYW5yb29tLnYxLlVwZGF0ZVNhbmRib3hOZXR3b3JrUmVzcG9uc2ViBnByb3RvMw");
/**
 * Describes the message cleanroom.v1.UpdateSandboxNetworkRequest.
 * Use `create(UpdateSandboxNetworkRequestSchema)` to create a new message.
 */
export const UpdateSandboxNetworkRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_network, 0);
/**
 * Describes the message cleanroom.v1.UpdateSandboxNetworkResponse.
 * Use `create(UpdateSandboxNetworkResponseSchema)` to create a new message.
 */
export const UpdateSandboxNetworkResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_network, 1);
/**
 * @generated from service cleanroom.v1.NetworkService
 */
export const NetworkService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_network, 0);
