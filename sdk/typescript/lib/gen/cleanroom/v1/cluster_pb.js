// Cluster (issue 34, docs/cluster.md): the members of the cluster this server belongs to
// (`cleanroom serve --cluster etcd=URL… --node-name NAME --advertise URL`), as etcd holds
// them: each registered under a lease it renews; a member that stops renewing is gone
// within the lease's TTL.
import { fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
import { file_google_protobuf_timestamp } from "@bufbuild/protobuf/wkt";
/**
 * Describes the file cleanroom/v1/cluster.proto.
 */
export const file_cleanroom_v1_cluster = /*@__PURE__*/ fileDesc("ChpjbGVhbnJvb20vdjEvY2x1c3Rlci5wcm90bxIMY2xlYW5yb29tLnYxIscBCg1DbHVzdGVyTWVtYmVyEgwKBG5hbWUYASABKAkSEQoJYWR2ZXJ0aXNlGAIgASgJEg8KB3ZlcnNpb24YAyABKAkSEAoIcnVudGltZXMYBCADKAkSEQoJc2FuZGJveGVzGAUgASgEEhAKCGNhcGFjaXR5GAYgASgEEi0KCWpvaW5lZF9hdBgHIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASEAoIbGVhc2VfaWQYCCABKAMSDAoEc2VsZhgJIAEoCCIZChdHZXRDbHVzdGVyU3RhdHVzUmVxdWVzdCJbChhHZXRDbHVzdGVyU3RhdHVzUmVzcG9uc2USEQoJbm9kZV9uYW1lGAEgASgJEiwKB21lbWJlcnMYAiADKAsyGy5jbGVhbnJvb20udjEuQ2x1c3Rlck1lbWJlcjJzCg5DbHVzdGVyU2VydmljZRJhChBHZXRDbHVzdGVyU3RhdHVzEiUuY2xlYW5yb29tLnYxLkdldENsdXN0ZXJTdGF0dXNSZXF1ZXN0GiYuY2xlYW5yb29tLnYxLkdldENsdXN0ZXJTdGF0dXNSZXNwb25zZWIGcHJvdG8z", [file_google_protobuf_timestamp]);
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
 * Admins only (`permission_denied` otherwise): membership is the operator's view.
 *
 * @generated from service cleanroom.v1.ClusterService
 */
export const ClusterService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_cluster, 0);
