import type { GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/cluster.proto.
 */
export declare const file_cleanroom_v1_cluster: GenFile;
/**
 * @generated from message cleanroom.v1.ClusterMember
 */
export type ClusterMember = Message<"cleanroom.v1.ClusterMember"> & {
    /**
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * Its API URL.
     *
     * @generated from field: string advertise = 2;
     */
    advertise: string;
    /**
     * @generated from field: string version = 3;
     */
    version: string;
    /**
     * Isolation runtimes it offers (`linux`, `gvisor`).
     *
     * @generated from field: repeated string runtimes = 4;
     */
    runtimes: string[];
    /**
     * Live sandboxes on it (as it last reported: every few seconds).
     *
     * @generated from field: uint64 sandboxes = 5;
     */
    sandboxes: bigint;
    /**
     * How many sandboxes it will hold (0: no fixed cap).
     *
     * @generated from field: uint64 capacity = 6;
     */
    capacity: bigint;
    /**
     * @generated from field: google.protobuf.Timestamp joined_at = 7;
     */
    joinedAt?: Timestamp | undefined;
    /**
     * The etcd lease its membership lives under.
     *
     * @generated from field: int64 lease_id = 8;
     */
    leaseId: bigint;
    /**
     * True for the server that answered.
     *
     * @generated from field: bool self = 9;
     */
    self: boolean;
};
/**
 * Describes the message cleanroom.v1.ClusterMember.
 * Use `create(ClusterMemberSchema)` to create a new message.
 */
export declare const ClusterMemberSchema: GenMessage<ClusterMember>;
/**
 * @generated from message cleanroom.v1.GetClusterStatusRequest
 */
export type GetClusterStatusRequest = Message<"cleanroom.v1.GetClusterStatusRequest"> & {};
/**
 * Describes the message cleanroom.v1.GetClusterStatusRequest.
 * Use `create(GetClusterStatusRequestSchema)` to create a new message.
 */
export declare const GetClusterStatusRequestSchema: GenMessage<GetClusterStatusRequest>;
/**
 * @generated from message cleanroom.v1.GetClusterStatusResponse
 */
export type GetClusterStatusResponse = Message<"cleanroom.v1.GetClusterStatusResponse"> & {
    /**
     * This server's name.
     *
     * @generated from field: string node_name = 1;
     */
    nodeName: string;
    /**
     * Every live member, by name.
     *
     * @generated from field: repeated cleanroom.v1.ClusterMember members = 2;
     */
    members: ClusterMember[];
};
/**
 * Describes the message cleanroom.v1.GetClusterStatusResponse.
 * Use `create(GetClusterStatusResponseSchema)` to create a new message.
 */
export declare const GetClusterStatusResponseSchema: GenMessage<GetClusterStatusResponse>;
/**
 * Admins only (`permission_denied` otherwise): membership is the operator's view.
 *
 * @generated from service cleanroom.v1.ClusterService
 */
export declare const ClusterService: GenService<{
    /**
     * `cluster_disabled` on a server without `--cluster`; `cluster_unavailable` when etcd
     * does not answer in time.
     *
     * @generated from rpc cleanroom.v1.ClusterService.GetClusterStatus
     */
    getClusterStatus: {
        methodKind: "unary";
        input: typeof GetClusterStatusRequestSchema;
        output: typeof GetClusterStatusResponseSchema;
    };
}>;
