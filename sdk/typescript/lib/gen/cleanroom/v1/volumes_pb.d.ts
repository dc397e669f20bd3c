import type { GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/volumes.proto.
 */
export declare const file_cleanroom_v1_volumes: GenFile;
/**
 * @generated from message cleanroom.v1.Volume
 */
export type Volume = Message<"cleanroom.v1.Volume"> & {
    /**
     * `vol_…`
     *
     * @generated from field: string volume_id = 1;
     */
    volumeId: string;
    /**
     * Unique per owner: 1-63 of a-z 0-9 . _ - starting with a letter or digit.
     *
     * @generated from field: string name = 2;
     */
    name: string;
    /**
     * @generated from field: string owner = 3;
     */
    owner: string;
    /**
     * The filesystem's size: writes past it fail with ENOSPC inside the sandbox.
     *
     * @generated from field: uint64 size_bytes = 4;
     */
    sizeBytes: bigint;
    /**
     * @generated from field: google.protobuf.Timestamp created_at = 5;
     */
    createdAt?: Timestamp | undefined;
    /**
     * Live sandboxes that mount it now (the caller's view: ids of sandboxes it may see).
     *
     * @generated from field: repeated string mounted_by = 6;
     */
    mountedBy: string[];
    /**
     * True when one of them mounts it read-write.
     *
     * @generated from field: bool mounted_rw = 7;
     */
    mountedRw: boolean;
};
/**
 * Describes the message cleanroom.v1.Volume.
 * Use `create(VolumeSchema)` to create a new message.
 */
export declare const VolumeSchema: GenMessage<Volume>;
/**
 * @generated from message cleanroom.v1.CreateVolumeRequest
 */
export type CreateVolumeRequest = Message<"cleanroom.v1.CreateVolumeRequest"> & {
    /**
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * 0: the server's default (1 GiB).
     *
     * @generated from field: uint64 size_bytes = 2;
     */
    sizeBytes: bigint;
};
/**
 * Describes the message cleanroom.v1.CreateVolumeRequest.
 * Use `create(CreateVolumeRequestSchema)` to create a new message.
 */
export declare const CreateVolumeRequestSchema: GenMessage<CreateVolumeRequest>;
/**
 * @generated from message cleanroom.v1.CreateVolumeResponse
 */
export type CreateVolumeResponse = Message<"cleanroom.v1.CreateVolumeResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Volume volume = 1;
     */
    volume?: Volume | undefined;
};
/**
 * Describes the message cleanroom.v1.CreateVolumeResponse.
 * Use `create(CreateVolumeResponseSchema)` to create a new message.
 */
export declare const CreateVolumeResponseSchema: GenMessage<CreateVolumeResponse>;
/**
 * @generated from message cleanroom.v1.ListVolumesRequest
 */
export type ListVolumesRequest = Message<"cleanroom.v1.ListVolumesRequest"> & {};
/**
 * Describes the message cleanroom.v1.ListVolumesRequest.
 * Use `create(ListVolumesRequestSchema)` to create a new message.
 */
export declare const ListVolumesRequestSchema: GenMessage<ListVolumesRequest>;
/**
 * @generated from message cleanroom.v1.ListVolumesResponse
 */
export type ListVolumesResponse = Message<"cleanroom.v1.ListVolumesResponse"> & {
    /**
     * @generated from field: repeated cleanroom.v1.Volume volumes = 1;
     */
    volumes: Volume[];
};
/**
 * Describes the message cleanroom.v1.ListVolumesResponse.
 * Use `create(ListVolumesResponseSchema)` to create a new message.
 */
export declare const ListVolumesResponseSchema: GenMessage<ListVolumesResponse>;
/**
 * `volume` is a name (the caller's volume of that name) or a `vol_…` id.
 *
 * @generated from message cleanroom.v1.GetVolumeRequest
 */
export type GetVolumeRequest = Message<"cleanroom.v1.GetVolumeRequest"> & {
    /**
     * @generated from field: string volume = 1;
     */
    volume: string;
};
/**
 * Describes the message cleanroom.v1.GetVolumeRequest.
 * Use `create(GetVolumeRequestSchema)` to create a new message.
 */
export declare const GetVolumeRequestSchema: GenMessage<GetVolumeRequest>;
/**
 * @generated from message cleanroom.v1.GetVolumeResponse
 */
export type GetVolumeResponse = Message<"cleanroom.v1.GetVolumeResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Volume volume = 1;
     */
    volume?: Volume | undefined;
};
/**
 * Describes the message cleanroom.v1.GetVolumeResponse.
 * Use `create(GetVolumeResponseSchema)` to create a new message.
 */
export declare const GetVolumeResponseSchema: GenMessage<GetVolumeResponse>;
/**
 * @generated from message cleanroom.v1.DeleteVolumeRequest
 */
export type DeleteVolumeRequest = Message<"cleanroom.v1.DeleteVolumeRequest"> & {
    /**
     * @generated from field: string volume = 1;
     */
    volume: string;
};
/**
 * Describes the message cleanroom.v1.DeleteVolumeRequest.
 * Use `create(DeleteVolumeRequestSchema)` to create a new message.
 */
export declare const DeleteVolumeRequestSchema: GenMessage<DeleteVolumeRequest>;
/**
 * @generated from message cleanroom.v1.DeleteVolumeResponse
 */
export type DeleteVolumeResponse = Message<"cleanroom.v1.DeleteVolumeResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Volume volume = 1;
     */
    volume?: Volume | undefined;
};
/**
 * Describes the message cleanroom.v1.DeleteVolumeResponse.
 * Use `create(DeleteVolumeResponseSchema)` to create a new message.
 */
export declare const DeleteVolumeResponseSchema: GenMessage<DeleteVolumeResponse>;
/**
 * Volumes are owned by the principal that created it; another principal's volume answers
 * `volume_not_found` exactly like one that does not exist (admins see and remove all).
 *
 * @generated from service cleanroom.v1.VolumeService
 */
export declare const VolumeService: GenService<{
    /**
     * `volume_exists` when the caller already has one of that name.
     *
     * @generated from rpc cleanroom.v1.VolumeService.CreateVolume
     */
    createVolume: {
        methodKind: "unary";
        input: typeof CreateVolumeRequestSchema;
        output: typeof CreateVolumeResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.VolumeService.ListVolumes
     */
    listVolumes: {
        methodKind: "unary";
        input: typeof ListVolumesRequestSchema;
        output: typeof ListVolumesResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.VolumeService.GetVolume
     */
    getVolume: {
        methodKind: "unary";
        input: typeof GetVolumeRequestSchema;
        output: typeof GetVolumeResponseSchema;
    };
    /**
     * `volume_in_use` while a live sandbox mounts it.
     *
     * @generated from rpc cleanroom.v1.VolumeService.DeleteVolume
     */
    deleteVolume: {
        methodKind: "unary";
        input: typeof DeleteVolumeRequestSchema;
        output: typeof DeleteVolumeResponseSchema;
    };
}>;
