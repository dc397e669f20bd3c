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
    /**
     * Drained (`DrainNode`): placement puts nothing new on it.
     *
     * @generated from field: bool draining = 10;
     */
    draining: boolean;
    /**
     * Since when, and by which principal (set when draining).
     *
     * @generated from field: google.protobuf.Timestamp draining_since = 11;
     */
    drainingSince?: Timestamp | undefined;
    /**
     * @generated from field: string drained_by = 12;
     */
    drainedBy: string;
    /**
     * Its 1-minute load average as it last reported, to the nearest 0.5 (a member rewrites
     * its record only when a reported figure changes; a finer one would rewrite it at every
     * renewal).
     *
     * @generated from field: double load_average = 13;
     */
    loadAverage: number;
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
 * @generated from message cleanroom.v1.DrainNodeRequest
 */
export type DrainNodeRequest = Message<"cleanroom.v1.DrainNodeRequest"> & {
    /**
     * The member's node name.
     *
     * @generated from field: string name = 1;
     */
    name: string;
};
/**
 * Describes the message cleanroom.v1.DrainNodeRequest.
 * Use `create(DrainNodeRequestSchema)` to create a new message.
 */
export declare const DrainNodeRequestSchema: GenMessage<DrainNodeRequest>;
/**
 * @generated from message cleanroom.v1.DrainNodeResponse
 */
export type DrainNodeResponse = Message<"cleanroom.v1.DrainNodeResponse"> & {
    /**
     * The member as it is now (draining; its sandboxes as it last reported them).
     *
     * @generated from field: cleanroom.v1.ClusterMember member = 1;
     */
    member?: ClusterMember | undefined;
};
/**
 * Describes the message cleanroom.v1.DrainNodeResponse.
 * Use `create(DrainNodeResponseSchema)` to create a new message.
 */
export declare const DrainNodeResponseSchema: GenMessage<DrainNodeResponse>;
/**
 * @generated from message cleanroom.v1.UndrainNodeRequest
 */
export type UndrainNodeRequest = Message<"cleanroom.v1.UndrainNodeRequest"> & {
    /**
     * @generated from field: string name = 1;
     */
    name: string;
};
/**
 * Describes the message cleanroom.v1.UndrainNodeRequest.
 * Use `create(UndrainNodeRequestSchema)` to create a new message.
 */
export declare const UndrainNodeRequestSchema: GenMessage<UndrainNodeRequest>;
/**
 * @generated from message cleanroom.v1.UndrainNodeResponse
 */
export type UndrainNodeResponse = Message<"cleanroom.v1.UndrainNodeResponse"> & {
    /**
     * False when it was not drained (nothing changed).
     *
     * @generated from field: bool was_draining = 1;
     */
    wasDraining: boolean;
};
/**
 * Describes the message cleanroom.v1.UndrainNodeResponse.
 * Use `create(UndrainNodeResponseSchema)` to create a new message.
 */
export declare const UndrainNodeResponseSchema: GenMessage<UndrainNodeResponse>;
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
    /**
     * Drain a live member (`cleanroom node drain NAME`): no new sandbox is placed on it from
     * now on; the sandboxes it holds keep running until their owners end them. Idempotent (a
     * second drain keeps the first mark). The mark is kept in etcd apart from the member's own
     * record: it survives the member's restarts until `UndrainNode`. `invalid_argument` when
     * no live member has that name.
     *
     * @generated from rpc cleanroom.v1.ClusterService.DrainNode
     */
    drainNode: {
        methodKind: "unary";
        input: typeof DrainNodeRequestSchema;
        output: typeof DrainNodeResponseSchema;
    };
    /**
     * Undo a drain (of a live member or of one that has left).
     *
     * @generated from rpc cleanroom.v1.ClusterService.UndrainNode
     */
    undrainNode: {
        methodKind: "unary";
        input: typeof UndrainNodeRequestSchema;
        output: typeof UndrainNodeResponseSchema;
    };
}>;
