import type { GenFile, GenMessage } from "@bufbuild/protobuf/codegenv2";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/grpc_status.proto.
 */
export declare const file_cleanroom_v1_grpc_status: GenFile;
/**
 * The gRPC `grpc-status-details-bin` trailer, wire-compatible with `google.rpc.Status`
 * (and its details with `google.protobuf.Any`). The server uses it to attach the
 * `cleanroom.v1.ErrorDetail` to errors the Connect framework raises before a handler runs
 * (unknown method, size limits, undecodable requests), so a gRPC client reads the same
 * stable code as from any other error. Never sent as an RPC message.
 *
 * @generated from message cleanroom.v1.GrpcStatus
 */
export type GrpcStatus = Message<"cleanroom.v1.GrpcStatus"> & {
    /**
     * @generated from field: int32 code = 1;
     */
    code: number;
    /**
     * @generated from field: string message = 2;
     */
    message: string;
    /**
     * @generated from field: repeated cleanroom.v1.GrpcStatusDetail details = 3;
     */
    details: GrpcStatusDetail[];
};
/**
 * Describes the message cleanroom.v1.GrpcStatus.
 * Use `create(GrpcStatusSchema)` to create a new message.
 */
export declare const GrpcStatusSchema: GenMessage<GrpcStatus>;
/**
 * Wire-compatible with `google.protobuf.Any`.
 *
 * @generated from message cleanroom.v1.GrpcStatusDetail
 */
export type GrpcStatusDetail = Message<"cleanroom.v1.GrpcStatusDetail"> & {
    /**
     * @generated from field: string type_url = 1;
     */
    typeUrl: string;
    /**
     * @generated from field: bytes value = 2;
     */
    value: Uint8Array;
};
/**
 * Describes the message cleanroom.v1.GrpcStatusDetail.
 * Use `create(GrpcStatusDetailSchema)` to create a new message.
 */
export declare const GrpcStatusDetailSchema: GenMessage<GrpcStatusDetail>;
