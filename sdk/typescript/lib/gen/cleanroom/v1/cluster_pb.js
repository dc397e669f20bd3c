// Cluster (issue 34, docs/cluster.md): the members of the cluster this server belongs to
// (`cleanroom serve --cluster etcd=URL… --node-name NAME --advertise URL`), as etcd holds
// them: each registered under a lease it renews; a member that stops renewing is gone
// within the lease's TTL.
import { fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
import { file_google_protobuf_timestamp } from "@bufbuild/protobuf/wkt";
/**
 * Describes the file cleanroom/v1/cluster.proto.
 */
export const file_cleanroom_v1_cluster = /*@__PURE__*/ fileDesc("ChpjbGVhbnJvb20vdjEvY2x1c3Rlci5wcm90bxIMY2xlYW5yb29tLnYxIrcCCg1DbHVzdGVyTWVtYmVyEgwKBG5hbWUYASABKAkSEQoJYWR2ZXJ0aXNlGAIgASgJEg8KB3ZlcnNpb24YAyABKAkSEAoIcnVudGltZXMYBCADKAkSEQoJc2FuZGJveGVzGAUgASgEEhAKCGNhcGFjaXR5GAYgASgEEi0KCWpvaW5lZF9hdBgHIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASEAoIbGVhc2VfaWQYCCABKAMSDAoEc2VsZhgJIAEoCBIQCghkcmFpbmluZxgKIAEoCBIyCg5kcmFpbmluZ19zaW5jZRgLIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASEgoKZHJhaW5lZF9ieRgMIAEoCRIUCgxsb2FkX2F2ZXJhZ2UYDSABKAEiGQoXR2V0Q2x1c3RlclN0YXR1c1JlcXVlc3QiWwoYR2V0Q2x1c3RlclN0YXR1c1Jlc3BvbnNlEhEKCW5vZGVfbmFtZRgBIAEoCRIsCgdtZW1iZXJzGAIgAygLMhsuY2xlYW5yb29tLnYxLkNsdXN0ZXJNZW1iZXIiIAoQRHJhaW5Ob2RlUmVxdWVzdBIMCgRuYW1lGAEgASgJIkAKEURyYWluTm9kZVJlc3BvbnNlEisKBm1lbWJlchgBIAEoCzIbLmNsZWFucm9vbS52MS5DbHVzdGVyTWVtYmVyIiIKElVuZHJhaW5Ob2RlUmVxdWVzdBIMCgRuYW1lGAEgASgJIisKE1VuZHJhaW5Ob2RlUmVzcG9uc2USFAoMd2FzX2RyYWluaW5nGAEgASgIMpUCCg5DbHVzdGVyU2VydmljZRJhChBHZXRDbHVzdGVyU3RhdHVzEiUuY2xlYW5yb29tLnYxLkdldENsdXN0ZXJTdGF0dXNSZXF1ZXN0GiYuY2xlYW5yb29tLnYxLkdldENsdXN0ZXJTdGF0dXNSZXNwb25zZRJMCglEcmFpbk5vZGUSHi5jbGVhbnJvb20udjEuRHJhaW5Ob2RlUmVxdWVzdBofLmNsZWFucm9vbS52MS5EcmFpbk5vZGVSZXNwb25zZRJSCgtVbmRyYWluTm9kZRIgLmNsZWFucm9vbS52MS5VbmRyYWluTm9kZVJlcXVlc3QaIS5jbGVhbnJvb20udjEuVW5kcmFpbk5vZGVSZXNwb25zZWIGcHJvdG8z", [file_google_protobuf_timestamp]);
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
