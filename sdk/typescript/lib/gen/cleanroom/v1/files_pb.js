// Cleanroom files API, v1: move files and directories in and out of a sandbox.
//
// Every operation runs with the sandbox's OWN identity (a helper forked by the sandbox's
// pid 1: its uid, its mount namespace, its landlock domain and seccomp filter). Through
// this API a sandbox's owner gets at most what the sandbox's own processes could read or
// write: a symlink the sandbox planted resolves inside the sandbox's root, a file the
// sandbox may not read is `permission_denied`, a write beyond the sandbox's disk limit is
// `resource_exhausted`. Paths are absolute, as the sandbox sees them.
//
// Transport choice (docs/files.md): uploads are CHUNKED UNARY calls with an upload id and
// an offset, not a client stream. They work over HTTP/1.1 and the unix socket with every
// Connect client (browsers and connect-node cannot send client streams over HTTP/1.1),
// each chunk is acknowledged, and an interrupted upload resumes at the offset the server
// reports. Downloads are server streams (fine over HTTP/1.1) that start at any offset.
//
// Errors carry `ErrorDetail.code`: `sandbox_not_found`, `sandbox_not_ready`,
// `file_not_found`, `permission_denied`, `file_not_readable` (pseudo filesystems, FIFOs,
// devices), `file_exists`, `file_type_mismatch` (a directory where a file was expected or
// the reverse), `directory_not_empty`, `resource_exhausted` (disk limit, too many uploads),
// `upload_not_found`, `upload_offset_mismatch` (details["offset"] = where the upload
// stands), `invalid_argument`.
import { enumDesc, fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
import { file_google_protobuf_timestamp } from "@bufbuild/protobuf/wkt";
/**
 * Describes the file cleanroom/v1/files.proto.
 */
export const file_cleanroom_v1_files = /*@__PURE__*/ fileDesc("ChhjbGVhbnJvb20vdjEvZmlsZXMucHJvdG8SDGNsZWFucm9vbS52MSLZAQoPU2FuZGJveEZpbGVJbmZvEgwKBHBhdGgYASABKAkSDAoEbmFtZRgCIAEoCRIrCgR0eXBlGAMgASgOMh0uY2xlYW5yb29tLnYxLlNhbmRib3hGaWxlVHlwZRIMCgRzaXplGAQgASgEEgwKBG1vZGUYBSABKA0SCwoDdWlkGAYgASgNEgsKA2dpZBgHIAEoDRIvCgttb2RpZmllZF9hdBgIIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASFgoOc3ltbGlua190YXJnZXQYCSABKAki6gEKF1NhbmRib3hGaWxlV3JpdGVPcHRpb25zEjEKBmZvcm1hdBgBIAEoDjIhLmNsZWFucm9vbS52MS5TYW5kYm94VXBsb2FkRm9ybWF0EgwKBG1vZGUYAiABKA0SEAoDdWlkGAMgASgNSACIAQESEAoDZ2lkGAQgASgNSAGIAQESFgoOY3JlYXRlX3BhcmVudHMYBSABKAgSFAoMbm9fb3ZlcndyaXRlGAYgASgIEhoKDWV4cGVjdGVkX3NpemUYByABKARIAogBAUIGCgRfdWlkQgYKBF9naWRCEAoOX2V4cGVjdGVkX3NpemUixAEKF1dyaXRlU2FuZGJveEZpbGVSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSDAoEcGF0aBgCIAEoCRIRCgl1cGxvYWRfaWQYAyABKAkSDgoGb2Zmc2V0GAQgASgEEgwKBGRhdGEYBSABKAwSDgoGZmluaXNoGAYgASgIEjYKB29wdGlvbnMYByABKAsyJS5jbGVhbnJvb20udjEuU2FuZGJveEZpbGVXcml0ZU9wdGlvbnMSDgoGc2hhMjU2GAggASgJIqUBChhXcml0ZVNhbmRib3hGaWxlUmVzcG9uc2USEQoJdXBsb2FkX2lkGAEgASgJEg4KBm9mZnNldBgCIAEoBBIQCghmaW5pc2hlZBgDIAEoCBIrCgRmaWxlGAQgASgLMh0uY2xlYW5yb29tLnYxLlNhbmRib3hGaWxlSW5mbxIOCgZzaGEyNTYYBSABKAkSFwoPbWF4X2NodW5rX2J5dGVzGAYgASgEIoACCg1TYW5kYm94VXBsb2FkEhEKCXVwbG9hZF9pZBgBIAEoCRISCgpzYW5kYm94X2lkGAIgASgJEgwKBHBhdGgYAyABKAkSMQoGZm9ybWF0GAQgASgOMiEuY2xlYW5yb29tLnYxLlNhbmRib3hVcGxvYWRGb3JtYXQSDgoGb2Zmc2V0GAUgASgEEi4KCmNyZWF0ZWRfYXQYBiABKAsyGi5nb29nbGUucHJvdG9idWYuVGltZXN0YW1wEi4KCmV4cGlyZXNfYXQYByABKAsyGi5nb29nbGUucHJvdG9idWYuVGltZXN0YW1wEhcKD21heF9jaHVua19ieXRlcxgIIAEoBCJAChdHZXRTYW5kYm94VXBsb2FkUmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEhEKCXVwbG9hZF9pZBgCIAEoCSJHChhHZXRTYW5kYm94VXBsb2FkUmVzcG9uc2USKwoGdXBsb2FkGAEgASgLMhsuY2xlYW5yb29tLnYxLlNhbmRib3hVcGxvYWQiQwoaQ2FuY2VsU2FuZGJveFVwbG9hZFJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCRIRCgl1cGxvYWRfaWQYAiABKAkiHQobQ2FuY2VsU2FuZGJveFVwbG9hZFJlc3BvbnNlIloKFlJlYWRTYW5kYm94RmlsZVJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCRIMCgRwYXRoGAIgASgJEg4KBm9mZnNldBgDIAEoBBIOCgZsZW5ndGgYBCABKAQiZAoXUmVhZFNhbmRib3hGaWxlUmVzcG9uc2USKwoEZmlsZRgBIAEoCzIdLmNsZWFucm9vbS52MS5TYW5kYm94RmlsZUluZm8SDgoGb2Zmc2V0GAIgASgEEgwKBGRhdGEYAyABKAwiUwoWU3RhdFNhbmRib3hGaWxlUmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEgwKBHBhdGgYAiABKAkSFwoPZm9sbG93X3N5bWxpbmtzGAMgASgIIkYKF1N0YXRTYW5kYm94RmlsZVJlc3BvbnNlEisKBGZpbGUYASABKAsyHS5jbGVhbnJvb20udjEuU2FuZGJveEZpbGVJbmZvImUKF0xpc3RTYW5kYm94RmlsZXNSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSDAoEcGF0aBgCIAEoCRITCgtzdGFydF9hZnRlchgDIAEoCRITCgttYXhfZW50cmllcxgEIAEoDSJdChhMaXN0U2FuZGJveEZpbGVzUmVzcG9uc2USLgoHZW50cmllcxgBIAMoCzIdLmNsZWFucm9vbS52MS5TYW5kYm94RmlsZUluZm8SEQoJdHJ1bmNhdGVkGAIgASgIIl4KG01ha2VTYW5kYm94RGlyZWN0b3J5UmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEgwKBHBhdGgYAiABKAkSDAoEbW9kZRgDIAEoDRIPCgdwYXJlbnRzGAQgASgIIlAKHE1ha2VTYW5kYm94RGlyZWN0b3J5UmVzcG9uc2USMAoJZGlyZWN0b3J5GAEgASgLMh0uY2xlYW5yb29tLnYxLlNhbmRib3hGaWxlSW5mbyJjChhSZW1vdmVTYW5kYm94RmlsZVJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCRIMCgRwYXRoGAIgASgJEhEKCXJlY3Vyc2l2ZRgDIAEoCBISCgptaXNzaW5nX29rGAQgASgIIiwKGVJlbW92ZVNhbmRib3hGaWxlUmVzcG9uc2USDwoHcmVtb3ZlZBgBIAEoCCI9ChlSZWFkU2FuZGJveEFyY2hpdmVSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSDAoEcGF0aBgCIAEoCSIqChpSZWFkU2FuZGJveEFyY2hpdmVSZXNwb25zZRIMCgRkYXRhGAEgASgMKrABCg9TYW5kYm94RmlsZVR5cGUSIQodU0FOREJPWF9GSUxFX1RZUEVfVU5TUEVDSUZJRUQQABIdChlTQU5EQk9YX0ZJTEVfVFlQRV9SRUdVTEFSEAESHwobU0FOREJPWF9GSUxFX1RZUEVfRElSRUNUT1JZEAISHQoZU0FOREJPWF9GSUxFX1RZUEVfU1lNTElOSxADEhsKF1NBTkRCT1hfRklMRV9UWVBFX09USEVSEAQqewoTU2FuZGJveFVwbG9hZEZvcm1hdBIlCiFTQU5EQk9YX1VQTE9BRF9GT1JNQVRfVU5TUEVDSUZJRUQQABIeChpTQU5EQk9YX1VQTE9BRF9GT1JNQVRfRklMRRABEh0KGVNBTkRCT1hfVVBMT0FEX0ZPUk1BVF9UQVIQAjKkBwoLRmlsZVNlcnZpY2USYQoQV3JpdGVTYW5kYm94RmlsZRIlLmNsZWFucm9vbS52MS5Xcml0ZVNhbmRib3hGaWxlUmVxdWVzdBomLmNsZWFucm9vbS52MS5Xcml0ZVNhbmRib3hGaWxlUmVzcG9uc2USYQoQR2V0U2FuZGJveFVwbG9hZBIlLmNsZWFucm9vbS52MS5HZXRTYW5kYm94VXBsb2FkUmVxdWVzdBomLmNsZWFucm9vbS52MS5HZXRTYW5kYm94VXBsb2FkUmVzcG9uc2USagoTQ2FuY2VsU2FuZGJveFVwbG9hZBIoLmNsZWFucm9vbS52MS5DYW5jZWxTYW5kYm94VXBsb2FkUmVxdWVzdBopLmNsZWFucm9vbS52MS5DYW5jZWxTYW5kYm94VXBsb2FkUmVzcG9uc2USYAoPUmVhZFNhbmRib3hGaWxlEiQuY2xlYW5yb29tLnYxLlJlYWRTYW5kYm94RmlsZVJlcXVlc3QaJS5jbGVhbnJvb20udjEuUmVhZFNhbmRib3hGaWxlUmVzcG9uc2UwARJeCg9TdGF0U2FuZGJveEZpbGUSJC5jbGVhbnJvb20udjEuU3RhdFNhbmRib3hGaWxlUmVxdWVzdBolLmNsZWFucm9vbS52MS5TdGF0U2FuZGJveEZpbGVSZXNwb25zZRJhChBMaXN0U2FuZGJveEZpbGVzEiUuY2xlYW5yb29tLnYxLkxpc3RTYW5kYm94RmlsZXNSZXF1ZXN0GiYuY2xlYW5yb29tLnYxLkxpc3RTYW5kYm94RmlsZXNSZXNwb25zZRJtChRNYWtlU2FuZGJveERpcmVjdG9yeRIpLmNsZWFucm9vbS52MS5NYWtlU2FuZGJveERpcmVjdG9yeVJlcXVlc3QaKi5jbGVhbnJvb20udjEuTWFrZVNhbmRib3hEaXJlY3RvcnlSZXNwb25zZRJkChFSZW1vdmVTYW5kYm94RmlsZRImLmNsZWFucm9vbS52MS5SZW1vdmVTYW5kYm94RmlsZVJlcXVlc3QaJy5jbGVhbnJvb20udjEuUmVtb3ZlU2FuZGJveEZpbGVSZXNwb25zZRJpChJSZWFkU2FuZGJveEFyY2hpdmUSJy5jbGVhbnJvb20udjEuUmVhZFNhbmRib3hBcmNoaXZlUmVxdWVzdBooLmNsZWFucm9vbS52MS5SZWFkU2FuZGJveEFyY2hpdmVSZXNwb25zZTABYgZwcm90bzM", [file_google_protobuf_timestamp]);
/**
 * Describes the message cleanroom.v1.SandboxFileInfo.
 * Use `create(SandboxFileInfoSchema)` to create a new message.
 */
export const SandboxFileInfoSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 0);
/**
 * Describes the message cleanroom.v1.SandboxFileWriteOptions.
 * Use `create(SandboxFileWriteOptionsSchema)` to create a new message.
 */
export const SandboxFileWriteOptionsSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 1);
/**
 * Describes the message cleanroom.v1.WriteSandboxFileRequest.
 * Use `create(WriteSandboxFileRequestSchema)` to create a new message.
 */
export const WriteSandboxFileRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 2);
/**
 * Describes the message cleanroom.v1.WriteSandboxFileResponse.
 * Use `create(WriteSandboxFileResponseSchema)` to create a new message.
 */
export const WriteSandboxFileResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 3);
/**
 * Describes the message cleanroom.v1.SandboxUpload.
 * Use `create(SandboxUploadSchema)` to create a new message.
 */
export const SandboxUploadSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 4);
/**
 * Describes the message cleanroom.v1.GetSandboxUploadRequest.
 * Use `create(GetSandboxUploadRequestSchema)` to create a new message.
 */
export const GetSandboxUploadRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 5);
/**
 * Describes the message cleanroom.v1.GetSandboxUploadResponse.
 * Use `create(GetSandboxUploadResponseSchema)` to create a new message.
 */
export const GetSandboxUploadResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 6);
/**
 * Describes the message cleanroom.v1.CancelSandboxUploadRequest.
 * Use `create(CancelSandboxUploadRequestSchema)` to create a new message.
 */
export const CancelSandboxUploadRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 7);
/**
 * Describes the message cleanroom.v1.CancelSandboxUploadResponse.
 * Use `create(CancelSandboxUploadResponseSchema)` to create a new message.
 */
export const CancelSandboxUploadResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 8);
/**
 * Describes the message cleanroom.v1.ReadSandboxFileRequest.
 * Use `create(ReadSandboxFileRequestSchema)` to create a new message.
 */
export const ReadSandboxFileRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 9);
/**
 * Describes the message cleanroom.v1.ReadSandboxFileResponse.
 * Use `create(ReadSandboxFileResponseSchema)` to create a new message.
 */
export const ReadSandboxFileResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 10);
/**
 * Describes the message cleanroom.v1.StatSandboxFileRequest.
 * Use `create(StatSandboxFileRequestSchema)` to create a new message.
 */
export const StatSandboxFileRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 11);
/**
 * Describes the message cleanroom.v1.StatSandboxFileResponse.
 * Use `create(StatSandboxFileResponseSchema)` to create a new message.
 */
export const StatSandboxFileResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 12);
/**
 * Describes the message cleanroom.v1.ListSandboxFilesRequest.
 * Use `create(ListSandboxFilesRequestSchema)` to create a new message.
 */
export const ListSandboxFilesRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 13);
/**
 * Describes the message cleanroom.v1.ListSandboxFilesResponse.
 * Use `create(ListSandboxFilesResponseSchema)` to create a new message.
 */
export const ListSandboxFilesResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 14);
/**
 * Describes the message cleanroom.v1.MakeSandboxDirectoryRequest.
 * Use `create(MakeSandboxDirectoryRequestSchema)` to create a new message.
 */
export const MakeSandboxDirectoryRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 15);
/**
 * Describes the message cleanroom.v1.MakeSandboxDirectoryResponse.
 * Use `create(MakeSandboxDirectoryResponseSchema)` to create a new message.
 */
export const MakeSandboxDirectoryResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 16);
/**
 * Describes the message cleanroom.v1.RemoveSandboxFileRequest.
 * Use `create(RemoveSandboxFileRequestSchema)` to create a new message.
 */
export const RemoveSandboxFileRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 17);
/**
 * Describes the message cleanroom.v1.RemoveSandboxFileResponse.
 * Use `create(RemoveSandboxFileResponseSchema)` to create a new message.
 */
export const RemoveSandboxFileResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 18);
/**
 * Describes the message cleanroom.v1.ReadSandboxArchiveRequest.
 * Use `create(ReadSandboxArchiveRequestSchema)` to create a new message.
 */
export const ReadSandboxArchiveRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 19);
/**
 * Describes the message cleanroom.v1.ReadSandboxArchiveResponse.
 * Use `create(ReadSandboxArchiveResponseSchema)` to create a new message.
 */
export const ReadSandboxArchiveResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_files, 20);
/**
 * @generated from enum cleanroom.v1.SandboxFileType
 */
export var SandboxFileType;
(function (SandboxFileType) {
    /**
     * @generated from enum value: SANDBOX_FILE_TYPE_UNSPECIFIED = 0;
     */
    SandboxFileType[SandboxFileType["UNSPECIFIED"] = 0] = "UNSPECIFIED";
    /**
     * @generated from enum value: SANDBOX_FILE_TYPE_REGULAR = 1;
     */
    SandboxFileType[SandboxFileType["REGULAR"] = 1] = "REGULAR";
    /**
     * @generated from enum value: SANDBOX_FILE_TYPE_DIRECTORY = 2;
     */
    SandboxFileType[SandboxFileType["DIRECTORY"] = 2] = "DIRECTORY";
    /**
     * @generated from enum value: SANDBOX_FILE_TYPE_SYMLINK = 3;
     */
    SandboxFileType[SandboxFileType["SYMLINK"] = 3] = "SYMLINK";
    /**
     * FIFO, socket, character or block device.
     *
     * @generated from enum value: SANDBOX_FILE_TYPE_OTHER = 4;
     */
    SandboxFileType[SandboxFileType["OTHER"] = 4] = "OTHER";
})(SandboxFileType || (SandboxFileType = {}));
/**
 * Describes the enum cleanroom.v1.SandboxFileType.
 */
export const SandboxFileTypeSchema = /*@__PURE__*/ enumDesc(file_cleanroom_v1_files, 0);
/**
 * @generated from enum cleanroom.v1.SandboxUploadFormat
 */
export var SandboxUploadFormat;
(function (SandboxUploadFormat) {
    /**
     * Same as FILE.
     *
     * @generated from enum value: SANDBOX_UPLOAD_FORMAT_UNSPECIFIED = 0;
     */
    SandboxUploadFormat[SandboxUploadFormat["UNSPECIFIED"] = 0] = "UNSPECIFIED";
    /**
     * The bytes are the file's content; `path` names the file.
     *
     * @generated from enum value: SANDBOX_UPLOAD_FORMAT_FILE = 1;
     */
    SandboxUploadFormat[SandboxUploadFormat["FILE"] = 1] = "FILE";
    /**
     * The bytes are a tar archive; `path` names an existing directory it is extracted into
     * at finish (entries' own modes; ownership as the sandbox's own uid unless the sandbox
     * could chown). The archive is staged in the sandbox first, so it counts twice against
     * the disk limit while it is extracted.
     *
     * @generated from enum value: SANDBOX_UPLOAD_FORMAT_TAR = 2;
     */
    SandboxUploadFormat[SandboxUploadFormat["TAR"] = 2] = "TAR";
})(SandboxUploadFormat || (SandboxUploadFormat = {}));
/**
 * Describes the enum cleanroom.v1.SandboxUploadFormat.
 */
export const SandboxUploadFormatSchema = /*@__PURE__*/ enumDesc(file_cleanroom_v1_files, 1);
/**
 * @generated from service cleanroom.v1.FileService
 */
export const FileService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_files, 0);
