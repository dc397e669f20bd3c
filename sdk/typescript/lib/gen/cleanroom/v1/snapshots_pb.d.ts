import type { GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { ResourceLimits, Sandbox, VolumeMount } from "./cleanroom_pb.js";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/snapshots.proto.
 */
export declare const file_cleanroom_v1_snapshots: GenFile;
/**
 * @generated from message cleanroom.v1.Checkpoint
 */
export type Checkpoint = Message<"cleanroom.v1.Checkpoint"> & {
    /**
     * @generated from field: string checkpoint_id = 1;
     */
    checkpointId: string;
    /**
     * The sandbox it was taken of.
     *
     * @generated from field: string source_sandbox_id = 2;
     */
    sourceSandboxId: string;
    /**
     * @generated from field: string runtime = 3;
     */
    runtime: string;
    /**
     * What the image is compatible with (gVisor: the `runsc --version` line); a restore
     * on a server with another is refused with `checkpoint_incompatible`.
     *
     * @generated from field: string runtime_version = 4;
     */
    runtimeVersion: string;
    /**
     * @generated from field: string policy_hash = 5;
     */
    policyHash: string;
    /**
     * @generated from field: string image_ref = 6;
     */
    imageRef: string;
    /**
     * @generated from field: string image_digest = 7;
     */
    imageDigest: string;
    /**
     * @generated from field: cleanroom.v1.ResourceLimits limits = 8;
     */
    limits?: ResourceLimits | undefined;
    /**
     * Bytes of the stored image files.
     *
     * @generated from field: uint64 size_bytes = 9;
     */
    sizeBytes: bigint;
    /**
     * @generated from field: uint64 file_count = 10;
     */
    fileCount: bigint;
    /**
     * sha256 of the canonical manifest (every image file's sha256, the runtime version,
     * the policy, the owner): the content address the id is derived from.
     *
     * @generated from field: string content_digest = 11;
     */
    contentDigest: string;
    /**
     * @generated from field: google.protobuf.Timestamp created_at = 12;
     */
    createdAt?: Timestamp | undefined;
    /**
     * What a restored copy does not get back as it was (open connections through the
     * egress gateway, secret placeholders...), one sentence each.
     *
     * @generated from field: repeated string dropped = 13;
     */
    dropped: string[];
};
/**
 * Describes the message cleanroom.v1.Checkpoint.
 * Use `create(CheckpointSchema)` to create a new message.
 */
export declare const CheckpointSchema: GenMessage<Checkpoint>;
/**
 * @generated from message cleanroom.v1.Snapshot
 */
export type Snapshot = Message<"cleanroom.v1.Snapshot"> & {
    /**
     * @generated from field: string snapshot_id = 1;
     */
    snapshotId: string;
    /**
     * The sandbox it was captured from.
     *
     * @generated from field: string source_sandbox_id = 2;
     */
    sourceSandboxId: string;
    /**
     * The snapshot that sandbox was itself restored from (empty: none).
     *
     * @generated from field: string parent_snapshot_id = 3;
     */
    parentSnapshotId: string;
    /**
     * @generated from field: string policy_hash = 4;
     */
    policyHash: string;
    /**
     * @generated from field: string image_ref = 5;
     */
    imageRef: string;
    /**
     * @generated from field: string image_digest = 6;
     */
    imageDigest: string;
    /**
     * @generated from field: cleanroom.v1.ResourceLimits limits = 7;
     */
    limits?: ResourceLimits | undefined;
    /**
     * Bytes of file content plus metadata stored for this snapshot.
     *
     * @generated from field: uint64 size_bytes = 8;
     */
    sizeBytes: bigint;
    /**
     * @generated from field: uint64 file_count = 9;
     */
    fileCount: bigint;
    /**
     * sha256 of the canonical manifest (content address; the id is derived from it).
     *
     * @generated from field: string content_digest = 10;
     */
    contentDigest: string;
    /**
     * @generated from field: google.protobuf.Timestamp created_at = 11;
     */
    createdAt?: Timestamp | undefined;
    /**
     * Named volumes the source sandbox mounted. Their contents are never captured
     * (docs/volumes.md): a sandbox restored from the snapshot mounts the same volumes again,
     * by name, with whatever they hold then.
     *
     * @generated from field: repeated cleanroom.v1.VolumeMount volumes_not_captured = 30;
     */
    volumesNotCaptured: VolumeMount[];
};
/**
 * Describes the message cleanroom.v1.Snapshot.
 * Use `create(SnapshotSchema)` to create a new message.
 */
export declare const SnapshotSchema: GenMessage<Snapshot>;
/**
 * @generated from message cleanroom.v1.PauseSandboxRequest
 */
export type PauseSandboxRequest = Message<"cleanroom.v1.PauseSandboxRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
};
/**
 * Describes the message cleanroom.v1.PauseSandboxRequest.
 * Use `create(PauseSandboxRequestSchema)` to create a new message.
 */
export declare const PauseSandboxRequestSchema: GenMessage<PauseSandboxRequest>;
/**
 * @generated from message cleanroom.v1.PauseSandboxResponse
 */
export type PauseSandboxResponse = Message<"cleanroom.v1.PauseSandboxResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Sandbox sandbox = 1;
     */
    sandbox?: Sandbox | undefined;
};
/**
 * Describes the message cleanroom.v1.PauseSandboxResponse.
 * Use `create(PauseSandboxResponseSchema)` to create a new message.
 */
export declare const PauseSandboxResponseSchema: GenMessage<PauseSandboxResponse>;
/**
 * @generated from message cleanroom.v1.ResumeSandboxRequest
 */
export type ResumeSandboxRequest = Message<"cleanroom.v1.ResumeSandboxRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
};
/**
 * Describes the message cleanroom.v1.ResumeSandboxRequest.
 * Use `create(ResumeSandboxRequestSchema)` to create a new message.
 */
export declare const ResumeSandboxRequestSchema: GenMessage<ResumeSandboxRequest>;
/**
 * @generated from message cleanroom.v1.ResumeSandboxResponse
 */
export type ResumeSandboxResponse = Message<"cleanroom.v1.ResumeSandboxResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Sandbox sandbox = 1;
     */
    sandbox?: Sandbox | undefined;
};
/**
 * Describes the message cleanroom.v1.ResumeSandboxResponse.
 * Use `create(ResumeSandboxResponseSchema)` to create a new message.
 */
export declare const ResumeSandboxResponseSchema: GenMessage<ResumeSandboxResponse>;
/**
 * @generated from message cleanroom.v1.CreateSnapshotRequest
 */
export type CreateSnapshotRequest = Message<"cleanroom.v1.CreateSnapshotRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
};
/**
 * Describes the message cleanroom.v1.CreateSnapshotRequest.
 * Use `create(CreateSnapshotRequestSchema)` to create a new message.
 */
export declare const CreateSnapshotRequestSchema: GenMessage<CreateSnapshotRequest>;
/**
 * @generated from message cleanroom.v1.CreateSnapshotResponse
 */
export type CreateSnapshotResponse = Message<"cleanroom.v1.CreateSnapshotResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Snapshot snapshot = 1;
     */
    snapshot?: Snapshot | undefined;
};
/**
 * Describes the message cleanroom.v1.CreateSnapshotResponse.
 * Use `create(CreateSnapshotResponseSchema)` to create a new message.
 */
export declare const CreateSnapshotResponseSchema: GenMessage<CreateSnapshotResponse>;
/**
 * @generated from message cleanroom.v1.GetSnapshotRequest
 */
export type GetSnapshotRequest = Message<"cleanroom.v1.GetSnapshotRequest"> & {
    /**
     * @generated from field: string snapshot_id = 1;
     */
    snapshotId: string;
};
/**
 * Describes the message cleanroom.v1.GetSnapshotRequest.
 * Use `create(GetSnapshotRequestSchema)` to create a new message.
 */
export declare const GetSnapshotRequestSchema: GenMessage<GetSnapshotRequest>;
/**
 * @generated from message cleanroom.v1.GetSnapshotResponse
 */
export type GetSnapshotResponse = Message<"cleanroom.v1.GetSnapshotResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Snapshot snapshot = 1;
     */
    snapshot?: Snapshot | undefined;
};
/**
 * Describes the message cleanroom.v1.GetSnapshotResponse.
 * Use `create(GetSnapshotResponseSchema)` to create a new message.
 */
export declare const GetSnapshotResponseSchema: GenMessage<GetSnapshotResponse>;
/**
 * @generated from message cleanroom.v1.ListSnapshotsRequest
 */
export type ListSnapshotsRequest = Message<"cleanroom.v1.ListSnapshotsRequest"> & {};
/**
 * Describes the message cleanroom.v1.ListSnapshotsRequest.
 * Use `create(ListSnapshotsRequestSchema)` to create a new message.
 */
export declare const ListSnapshotsRequestSchema: GenMessage<ListSnapshotsRequest>;
/**
 * @generated from message cleanroom.v1.ListSnapshotsResponse
 */
export type ListSnapshotsResponse = Message<"cleanroom.v1.ListSnapshotsResponse"> & {
    /**
     * @generated from field: repeated cleanroom.v1.Snapshot snapshots = 1;
     */
    snapshots: Snapshot[];
};
/**
 * Describes the message cleanroom.v1.ListSnapshotsResponse.
 * Use `create(ListSnapshotsResponseSchema)` to create a new message.
 */
export declare const ListSnapshotsResponseSchema: GenMessage<ListSnapshotsResponse>;
/**
 * @generated from message cleanroom.v1.RemoveSnapshotRequest
 */
export type RemoveSnapshotRequest = Message<"cleanroom.v1.RemoveSnapshotRequest"> & {
    /**
     * @generated from field: string snapshot_id = 1;
     */
    snapshotId: string;
};
/**
 * Describes the message cleanroom.v1.RemoveSnapshotRequest.
 * Use `create(RemoveSnapshotRequestSchema)` to create a new message.
 */
export declare const RemoveSnapshotRequestSchema: GenMessage<RemoveSnapshotRequest>;
/**
 * @generated from message cleanroom.v1.RemoveSnapshotResponse
 */
export type RemoveSnapshotResponse = Message<"cleanroom.v1.RemoveSnapshotResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Snapshot snapshot = 1;
     */
    snapshot?: Snapshot | undefined;
};
/**
 * Describes the message cleanroom.v1.RemoveSnapshotResponse.
 * Use `create(RemoveSnapshotResponseSchema)` to create a new message.
 */
export declare const RemoveSnapshotResponseSchema: GenMessage<RemoveSnapshotResponse>;
/**
 * @generated from message cleanroom.v1.CheckpointSandboxRequest
 */
export type CheckpointSandboxRequest = Message<"cleanroom.v1.CheckpointSandboxRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * Keep the sandbox running afterwards; without, it is stopped once checkpointed.
     *
     * @generated from field: bool leave_running = 2;
     */
    leaveRunning: boolean;
};
/**
 * Describes the message cleanroom.v1.CheckpointSandboxRequest.
 * Use `create(CheckpointSandboxRequestSchema)` to create a new message.
 */
export declare const CheckpointSandboxRequestSchema: GenMessage<CheckpointSandboxRequest>;
/**
 * @generated from message cleanroom.v1.CheckpointSandboxResponse
 */
export type CheckpointSandboxResponse = Message<"cleanroom.v1.CheckpointSandboxResponse"> & {
    /**
     * @generated from field: string checkpoint_id = 1;
     */
    checkpointId: string;
    /**
     * @generated from field: uint64 size_bytes = 2;
     */
    sizeBytes: bigint;
    /**
     * @generated from field: cleanroom.v1.Checkpoint checkpoint = 3;
     */
    checkpoint?: Checkpoint | undefined;
};
/**
 * Describes the message cleanroom.v1.CheckpointSandboxResponse.
 * Use `create(CheckpointSandboxResponseSchema)` to create a new message.
 */
export declare const CheckpointSandboxResponseSchema: GenMessage<CheckpointSandboxResponse>;
/**
 * @generated from message cleanroom.v1.GetCheckpointRequest
 */
export type GetCheckpointRequest = Message<"cleanroom.v1.GetCheckpointRequest"> & {
    /**
     * @generated from field: string checkpoint_id = 1;
     */
    checkpointId: string;
};
/**
 * Describes the message cleanroom.v1.GetCheckpointRequest.
 * Use `create(GetCheckpointRequestSchema)` to create a new message.
 */
export declare const GetCheckpointRequestSchema: GenMessage<GetCheckpointRequest>;
/**
 * @generated from message cleanroom.v1.GetCheckpointResponse
 */
export type GetCheckpointResponse = Message<"cleanroom.v1.GetCheckpointResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Checkpoint checkpoint = 1;
     */
    checkpoint?: Checkpoint | undefined;
};
/**
 * Describes the message cleanroom.v1.GetCheckpointResponse.
 * Use `create(GetCheckpointResponseSchema)` to create a new message.
 */
export declare const GetCheckpointResponseSchema: GenMessage<GetCheckpointResponse>;
/**
 * @generated from message cleanroom.v1.ListCheckpointsRequest
 */
export type ListCheckpointsRequest = Message<"cleanroom.v1.ListCheckpointsRequest"> & {};
/**
 * Describes the message cleanroom.v1.ListCheckpointsRequest.
 * Use `create(ListCheckpointsRequestSchema)` to create a new message.
 */
export declare const ListCheckpointsRequestSchema: GenMessage<ListCheckpointsRequest>;
/**
 * @generated from message cleanroom.v1.ListCheckpointsResponse
 */
export type ListCheckpointsResponse = Message<"cleanroom.v1.ListCheckpointsResponse"> & {
    /**
     * @generated from field: repeated cleanroom.v1.Checkpoint checkpoints = 1;
     */
    checkpoints: Checkpoint[];
};
/**
 * Describes the message cleanroom.v1.ListCheckpointsResponse.
 * Use `create(ListCheckpointsResponseSchema)` to create a new message.
 */
export declare const ListCheckpointsResponseSchema: GenMessage<ListCheckpointsResponse>;
/**
 * @generated from message cleanroom.v1.DeleteCheckpointRequest
 */
export type DeleteCheckpointRequest = Message<"cleanroom.v1.DeleteCheckpointRequest"> & {
    /**
     * @generated from field: string checkpoint_id = 1;
     */
    checkpointId: string;
};
/**
 * Describes the message cleanroom.v1.DeleteCheckpointRequest.
 * Use `create(DeleteCheckpointRequestSchema)` to create a new message.
 */
export declare const DeleteCheckpointRequestSchema: GenMessage<DeleteCheckpointRequest>;
/**
 * @generated from message cleanroom.v1.DeleteCheckpointResponse
 */
export type DeleteCheckpointResponse = Message<"cleanroom.v1.DeleteCheckpointResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Checkpoint checkpoint = 1;
     */
    checkpoint?: Checkpoint | undefined;
};
/**
 * Describes the message cleanroom.v1.DeleteCheckpointResponse.
 * Use `create(DeleteCheckpointResponseSchema)` to create a new message.
 */
export declare const DeleteCheckpointResponseSchema: GenMessage<DeleteCheckpointResponse>;
/**
 * @generated from service cleanroom.v1.SnapshotService
 */
export declare const SnapshotService: GenService<{
    /**
     * Freeze every process of a READY sandbox (status PAUSED); idempotent.
     *
     * @generated from rpc cleanroom.v1.SnapshotService.PauseSandbox
     */
    pauseSandbox: {
        methodKind: "unary";
        input: typeof PauseSandboxRequestSchema;
        output: typeof PauseSandboxResponseSchema;
    };
    /**
     * Thaw a PAUSED sandbox (status READY); idempotent.
     *
     * @generated from rpc cleanroom.v1.SnapshotService.ResumeSandbox
     */
    resumeSandbox: {
        methodKind: "unary";
        input: typeof ResumeSandboxRequestSchema;
        output: typeof ResumeSandboxResponseSchema;
    };
    /**
     * Capture a READY or PAUSED sandbox's writable state (frozen during the capture).
     *
     * @generated from rpc cleanroom.v1.SnapshotService.CreateSnapshot
     */
    createSnapshot: {
        methodKind: "unary";
        input: typeof CreateSnapshotRequestSchema;
        output: typeof CreateSnapshotResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.SnapshotService.GetSnapshot
     */
    getSnapshot: {
        methodKind: "unary";
        input: typeof GetSnapshotRequestSchema;
        output: typeof GetSnapshotResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.SnapshotService.ListSnapshots
     */
    listSnapshots: {
        methodKind: "unary";
        input: typeof ListSnapshotsRequestSchema;
        output: typeof ListSnapshotsResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.SnapshotService.RemoveSnapshot
     */
    removeSnapshot: {
        methodKind: "unary";
        input: typeof RemoveSnapshotRequestSchema;
        output: typeof RemoveSnapshotResponseSchema;
    };
    /**
     * Memory checkpoint of a READY sandbox (docs/checkpoints.md): its memory, processes,
     * writable filesystems and policy as a `ckpt_…` owned by the caller. Answered with
     * `backend_capability_mismatch` on a runtime that does not declare
     * `checkpoint_restore` (linux). Restore with `CreateSandboxRequest.from_checkpoint`.
     *
     * @generated from rpc cleanroom.v1.SnapshotService.CheckpointSandbox
     */
    checkpointSandbox: {
        methodKind: "unary";
        input: typeof CheckpointSandboxRequestSchema;
        output: typeof CheckpointSandboxResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.SnapshotService.GetCheckpoint
     */
    getCheckpoint: {
        methodKind: "unary";
        input: typeof GetCheckpointRequestSchema;
        output: typeof GetCheckpointResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.SnapshotService.ListCheckpoints
     */
    listCheckpoints: {
        methodKind: "unary";
        input: typeof ListCheckpointsRequestSchema;
        output: typeof ListCheckpointsResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.SnapshotService.DeleteCheckpoint
     */
    deleteCheckpoint: {
        methodKind: "unary";
        input: typeof DeleteCheckpointRequestSchema;
        output: typeof DeleteCheckpointResponseSchema;
    };
}>;
