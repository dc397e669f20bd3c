// Cluster (issue 34, docs/cluster.md): the members of the cluster this server belongs to
// (`cleanroom serve --cluster etcd=URL… --node-name NAME --advertise URL`), as etcd holds
// them: each registered under a lease it renews; a member that stops renewing is gone
// within the lease's TTL.
import { fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
import { file_google_protobuf_timestamp } from "@bufbuild/protobuf/wkt";
/**
 * Describes the file cleanroom/v1/cluster.proto.
 */
export const file_cleanroom_v1_cluster = /*@__PURE__*/ fileDesc("ChpjbGVhbnJvb20vdjEvY2x1c3Rlci5wcm90bxIMY2xlYW5yb29tLnYxIqECCg1DbHVzdGVyTWVtYmVyEgwKBG5hbWUYASABKAkSEQoJYWR2ZXJ0aXNlGAIgASgJEg8KB3ZlcnNpb24YAyABKAkSEAoIcnVudGltZXMYBCADKAkSEQoJc2FuZGJveGVzGAUgASgEEhAKCGNhcGFjaXR5GAYgASgEEi0KCWpvaW5lZF9hdBgHIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASEAoIbGVhc2VfaWQYCCABKAMSDAoEc2VsZhgJIAEoCBIQCghkcmFpbmluZxgKIAEoCBIyCg5kcmFpbmluZ19zaW5jZRgLIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASEgoKZHJhaW5lZF9ieRgMIAEoCSIZChdHZXRDbHVzdGVyU3RhdHVzUmVxdWVzdCJbChhHZXRDbHVzdGVyU3RhdHVzUmVzcG9uc2USEQoJbm9kZV9uYW1lGAEgASgJEiwKB21lbWJlcnMYAiADKAsyGy5jbGVhbnJvb20udjEuQ2x1c3Rlck1lbWJlciIgChBEcmFpbk5vZGVSZXF1ZXN0EgwKBG5hbWUYASABKAkiQAoRRHJhaW5Ob2RlUmVzcG9uc2USKwoGbWVtYmVyGAEgASgLMhsuY2xlYW5yb29tLnYxLkNsdXN0ZXJNZW1iZXIiIgoSVW5kcmFpbk5vZGVSZXF1ZXN0EgwKBG5hbWUYASABKAkiKwoTVW5kcmFpbk5vZGVSZXNwb25zZRIUCgx3YXNfZHJhaW5pbmcYASABKAgylQIKDkNsdXN0ZXJTZXJ2aWNlEmEKEEdldENsdXN0ZXJTdGF0dXMSJS5jbGVhbnJvb20udjEuR2V0Q2x1c3RlclN0YXR1c1JlcXVlc3QaJi5jbGVhbnJvb20udjEuR2V0Q2x1c3RlclN0YXR1c1Jlc3BvbnNlEkwKCURyYWluTm9kZRIeLmNsZWFucm9vbS52MS5EcmFpbk5vZGVSZXF1ZXN0Gh8uY2xlYW5yb29tLnYxLkRyYWluTm9kZVJlc3BvbnNlElIKC1VuZHJhaW5Ob2RlEiAuY2xlYW5yb29tLnYxLlVuZHJhaW5Ob2RlUmVxdWVzdBohLmNsZWFucm9vbS52MS5VbmRyYWluTm9kZVJlc3BvbnNlYgZwcm90bzM", [file_google_protobuf_timestamp]);
/**
 * Describes the message cleanroom.v1.ClusterMember.
 * Use `create(ClusterMemberSchema)` to create a new message.
 */
export const ClusterMemberSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cluster, 0);
/**
 * Describes the message cleanroom.v1.GetClusterStatusRequest.
 * Use `create(GetClusterStatusRequestSchema)` to create a new message.
 */
export const GetClusterStatusRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cluster, 1);
/**
 * Describes the message cleanroom.v1.GetClusterStatusResponse.
 * Use `create(GetClusterStatusResponseSchema)` to create a new message.
 */
export const GetClusterStatusResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cluster, 2);
/**
 * Describes the message cleanroom.v1.DrainNodeRequest.
 * Use `create(DrainNodeRequestSchema)` to create a new message.
 */
export const DrainNodeRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cluster, 3);
/**
 * Describes the message cleanroom.v1.DrainNodeResponse.
 * Use `create(DrainNodeResponseSchema)` to create a new message.
 */
export const DrainNodeResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cluster, 4);
/**
 * Describes the message cleanroom.v1.UndrainNodeRequest.
 * Use `create(UndrainNodeRequestSchema)` to create a new message.
 */
export const UndrainNodeRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cluster, 5);
/**
 * Describes the message cleanroom.v1.UndrainNodeResponse.
 * Use `create(UndrainNodeResponseSchema)` to create a new message.
 */
export const UndrainNodeResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cluster, 6);
/**
 * Admins only (`permission_denied` otherwise): membership is the operator's view.
 *
 * @generated from service cleanroom.v1.ClusterService
 */
export const ClusterService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_cluster, 0);
