// Cleanroom control API, v1.
//
// Source of truth for the contract between `cleanroom serve` and every client.
// Shapes follow the control-API design (seed 000): two services, unary
// lifecycle RPCs, server-streaming for durable execution output and event tails.
import { enumDesc, fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
import { file_google_protobuf_struct, file_google_protobuf_timestamp } from "@bufbuild/protobuf/wkt";
import { file_cleanroom_v1_usage } from "./usage_pb.js";
import { file_cleanroom_v1_inbound } from "./inbound_pb.js";
/**
 * Describes the file cleanroom/v1/cleanroom.proto.
 */
export const file_cleanroom_v1_cleanroom = /*@__PURE__*/ fileDesc("ChxjbGVhbnJvb20vdjEvY2xlYW5yb29tLnByb3RvEgxjbGVhbnJvb20udjEilQEKC0Vycm9yRGV0YWlsEgwKBGNvZGUYASABKAkSDwoHbWVzc2FnZRgCIAEoCRI3CgdkZXRhaWxzGAMgAygLMiYuY2xlYW5yb29tLnYxLkVycm9yRGV0YWlsLkRldGFpbHNFbnRyeRouCgxEZXRhaWxzRW50cnkSCwoDa2V5GAEgASgJEg0KBXZhbHVlGAIgASgJOgI4ASLGCAoHU2FuZGJveBISCgpzYW5kYm94X2lkGAEgASgJEisKBnN0YXR1cxgCIAEoDjIbLmNsZWFucm9vbS52MS5TYW5kYm94U3RhdHVzEg8KB2JhY2tlbmQYAyABKAkSEwoLcG9saWN5X2hhc2gYBCABKAkSLgoKY3JlYXRlZF9hdBgFIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASLgoKdXBkYXRlZF9hdBgGIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASGQoRbGFzdF9leGVjdXRpb25faWQYByABKAkSGwoTYWN0aXZlX2V4ZWN1dGlvbl9pZBgIIAEoCRIPCgdtZXNzYWdlGAkgASgJEhEKCWltYWdlX3JlZhgKIAEoCRIUCgxpbWFnZV9kaWdlc3QYCyABKAkSLQoMYmFja2VuZF9pbmZvGAwgASgLMhcuZ29vZ2xlLnByb3RvYnVmLlN0cnVjdBIxCgZsYWJlbHMYDSADKAsyIS5jbGVhbnJvb20udjEuU2FuZGJveC5MYWJlbHNFbnRyeRIYCg9lZ3Jlc3NfYXBwcm92ZWQY3AEgAygJEhcKDmVncmVzc19yZWZ1c2VkGN0BIAMoCRIUCgtlZ3Jlc3NfYXNrcxjeASABKAgSLgoKZXhwaXJlc19hdBh4IAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASEwoLdHRsX3NlY29uZHMYeSABKAQSHAoUaWRsZV90aW1lb3V0X3NlY29uZHMYeiABKAQSNAoQbGFzdF9hY3Rpdml0eV9hdBh7IAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASEwoLc3RvcF9yZWFzb24YfCABKAkSHQoVc3VzcGVuZF9hZnRlcl9zZWNvbmRzGH4gASgEEjAKDHN1c3BlbmRlZF9hdBh/IAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASKQoFdXNhZ2UYfSABKAsyGi5jbGVhbnJvb20udjEuU2FuZGJveFVzYWdlEhkKEGFnZW50X3B1YmxpY19rZXkYtAEgASgJEhkKEGRlbGVnYXRpb25fY2hhaW4YtQEgAygJEhAKB3Bvb2xfaWQYtgEgASgJEisKB3ZvbHVtZXMY5gEgAygLMhkuY2xlYW5yb29tLnYxLlZvbHVtZU1vdW50Eh0KFGVmZmVjdGl2ZV9ydWxlc19oYXNoGPoBIAEoCRITCgpsaXZlX2FsbG93GPsBIAMoCRISCglsaXZlX2RlbnkY/AEgAygJEjEKCWV4cG9zdXJlcxiOAiADKAsyHS5jbGVhbnJvb20udjEuU2FuZGJveEV4cG9zdXJlEg4KBW93bmVyGJgCIAEoCRotCgtMYWJlbHNFbnRyeRILCgNrZXkYASABKAkSDQoFdmFsdWUYAiABKAk6AjgBIoEDCglFeGVjdXRpb24SFAoMZXhlY3V0aW9uX2lkGAEgASgJEhIKCnNhbmRib3hfaWQYAiABKAkSLQoGc3RhdHVzGAMgASgOMh0uY2xlYW5yb29tLnYxLkV4ZWN1dGlvblN0YXR1cxIPCgdjb21tYW5kGAQgAygJEhEKCWV4aXRfY29kZRgFIAEoBRIuCgpzdGFydGVkX2F0GAYgASgLMhouZ29vZ2xlLnByb3RvYnVmLlRpbWVzdGFtcBIvCgtmaW5pc2hlZF9hdBgHIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASCwoDdHR5GAggASgIEikKBGtpbmQYCiABKA4yGy5jbGVhbnJvb20udjEuRXhlY3V0aW9uS2luZBIPCgdtZXNzYWdlGAsgASgJEgsKA2N3ZBgMIAEoCRIuCgpjcmVhdGVkX2F0GA0gASgLMhouZ29vZ2xlLnByb3RvYnVmLlRpbWVzdGFtcBIQCgh0cmFjZV9pZBgOIAEoCSKIBQoUQ3JlYXRlU2FuZGJveFJlcXVlc3QSEwoLcG9saWN5X3lhbWwYASABKAkSEQoJaW1hZ2VfcmVmGAIgASgJEhcKD2lkZW1wb3RlbmN5X2tleRgDIAEoCRI+CgZsYWJlbHMYBCADKAsyLi5jbGVhbnJvb20udjEuQ3JlYXRlU2FuZGJveFJlcXVlc3QuTGFiZWxzRW50cnkSLAoGbGltaXRzGAUgASgLMhwuY2xlYW5yb29tLnYxLlJlc291cmNlTGltaXRzEg4KBWxlYXJuGNwBIAEoCBJFCglsb2NrZmlsZXMYyAEgAygLMjEuY2xlYW5yb29tLnYxLkNyZWF0ZVNhbmRib3hSZXF1ZXN0LkxvY2tmaWxlc0VudHJ5EhMKC3R0bF9zZWNvbmRzGHggASgEEhwKFGlkbGVfdGltZW91dF9zZWNvbmRzGHkgASgEEh0KFXN1c3BlbmRfYWZ0ZXJfc2Vjb25kcxh6IAEoBBIWCg1mcm9tX3NuYXBzaG90GKABIAEoCRIYCg9mcm9tX2NoZWNrcG9pbnQYoQEgASgJEhkKEGFnZW50X3B1YmxpY19rZXkYtAEgASgJEhkKEGRlbGVnYXRpb25fY2hhaW4YtQEgAygJEhAKB25vX3Bvb2wYtgEgASgIEhAKB3J1bnRpbWUY8AEgASgJEisKB3ZvbHVtZXMY5gEgAygLMhkuY2xlYW5yb29tLnYxLlZvbHVtZU1vdW50Gi0KC0xhYmVsc0VudHJ5EgsKA2tleRgBIAEoCRINCgV2YWx1ZRgCIAEoCToCOAEaMAoOTG9ja2ZpbGVzRW50cnkSCwoDa2V5GAEgASgJEg0KBXZhbHVlGAIgASgMOgI4ASI8CgtWb2x1bWVNb3VudBIMCgRuYW1lGAEgASgJEgwKBHBhdGgYAiABKAkSEQoJcmVhZF9vbmx5GAMgASgIInIKDlJlc291cmNlTGltaXRzEhQKDG1lbW9yeV9ieXRlcxgBIAEoBBIMCgRwaWRzGAIgASgEEhIKCmNwdV9taWxsaXMYAyABKAQSEgoKZGlza19ieXRlcxgEIAEoBBIUCgxvdXRwdXRfYnl0ZXMYBSABKAQiawoVQ3JlYXRlU2FuZGJveFJlc3BvbnNlEiYKB3NhbmRib3gYASABKAsyFS5jbGVhbnJvb20udjEuU2FuZGJveBIqCglib290c3RyYXAYAiABKAsyFy5jbGVhbnJvb20udjEuQm9vdHN0cmFwIkIKCUJvb3RzdHJhcBIXCg9yZXBvc2l0b3J5X3BhdGgYASABKAkSHAoUZGVwZW5kZW5jaWVzX2NvbW1hbmQYAiADKAkiJwoRR2V0U2FuZGJveFJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCSI8ChJHZXRTYW5kYm94UmVzcG9uc2USJgoHc2FuZGJveBgBIAEoCzIVLmNsZWFucm9vbS52MS5TYW5kYm94IvQBChRMaXN0U2FuZGJveGVzUmVxdWVzdBIXCg9pbmNsdWRlX3N0b3BwZWQYASABKAgSPgoGbGFiZWxzGAIgAygLMi4uY2xlYW5yb29tLnYxLkxpc3RTYW5kYm94ZXNSZXF1ZXN0LkxhYmVsc0VudHJ5EhAKCG9ubHlfb3duGAMgASgIEg4KBW93bmVyGJgCIAEoCRIyCg1jaGFuZ2VkX3NpbmNlGJkCIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXAaLQoLTGFiZWxzRW50cnkSCwoDa2V5GAEgASgJEg0KBXZhbHVlGAIgASgJOgI4ASKgAQoVTGlzdFNhbmRib3hlc1Jlc3BvbnNlEigKCXNhbmRib3hlcxgBIAMoCzIVLmNsZWFucm9vbS52MS5TYW5kYm94EisKBmN1cnNvchiZAiABKAsyGi5nb29nbGUucHJvdG9idWYuVGltZXN0YW1wEhEKCGNvbXBsZXRlGJoCIAEoCBIdChR1bmxpc3RlZF9zYW5kYm94X2lkcxibAiADKAkiUQoaRG93bmxvYWRTYW5kYm94RmlsZVJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCRIMCgRwYXRoGAIgASgJEhEKCW1heF9ieXRlcxgDIAEoBCJdChtEb3dubG9hZFNhbmRib3hGaWxlUmVzcG9uc2USDAoEcGF0aBgBIAEoCRIPCgdjb250ZW50GAIgASgMEgwKBHNpemUYAyABKAQSEQoJdHJ1bmNhdGVkGAQgASgIIkIKF1Rlcm1pbmF0ZVNhbmRib3hSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSEwoKYmFja2dyb3VuZBjwASABKAgiQgoYVGVybWluYXRlU2FuZGJveFJlc3BvbnNlEiYKB3NhbmRib3gYASABKAsyFS5jbGVhbnJvb20udjEuU2FuZGJveCJYChpTdHJlYW1TYW5kYm94RXZlbnRzUmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEhYKDmFmdGVyX3NlcXVlbmNlGAIgASgEEg4KBmZvbGxvdxgDIAEoCCKsAgoMU2FuZGJveEV2ZW50EhAKCHNlcXVlbmNlGAEgASgEEhIKCnNhbmRib3hfaWQYAiABKAkSFAoMZXhlY3V0aW9uX2lkGAMgASgJEgwKBHR5cGUYBCABKAkSJgoCYXQYBSABKAsyGi5nb29nbGUucHJvdG9idWYuVGltZXN0YW1wEjMKDnNhbmRib3hfc3RhdHVzGAYgASgOMhsuY2xlYW5yb29tLnYxLlNhbmRib3hTdGF0dXMSNwoQZXhlY3V0aW9uX3N0YXR1cxgHIAEoDjIdLmNsZWFucm9vbS52MS5FeGVjdXRpb25TdGF0dXMSDwoHbWVzc2FnZRgIIAEoCRIrCgphdHRyaWJ1dGVzGAkgASgLMhcuZ29vZ2xlLnByb3RvYnVmLlN0cnVjdCK/AgoWQ3JlYXRlRXhlY3V0aW9uUmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEg8KB2NvbW1hbmQYAiADKAkSOgoDZW52GAMgAygLMi0uY2xlYW5yb29tLnYxLkNyZWF0ZUV4ZWN1dGlvblJlcXVlc3QuRW52RW50cnkSCwoDY3dkGAQgASgJEhcKD3RpbWVvdXRfc2Vjb25kcxgFIAEoDRIpCgRraW5kGAYgASgOMhsuY2xlYW5yb29tLnYxLkV4ZWN1dGlvbktpbmQSCwoDdHR5GAcgASgIEhQKDGF0dGFjaF9zdGRpbhgIIAEoCBIRCgh0dHlfY29scxiMASABKA0SEQoIdHR5X3Jvd3MYjQEgASgNGioKCEVudkVudHJ5EgsKA2tleRgBIAEoCRINCgV2YWx1ZRgCIAEoCToCOAEiRQoXQ3JlYXRlRXhlY3V0aW9uUmVzcG9uc2USKgoJZXhlY3V0aW9uGAEgASgLMhcuY2xlYW5yb29tLnYxLkV4ZWN1dGlvbiJuChZBdHRhY2hFeGVjdXRpb25SZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSFAoMZXhlY3V0aW9uX2lkGAIgASgJEhQKDGluaXRpYWxfY29scxgDIAEoDRIUCgxpbml0aWFsX3Jvd3MYBCABKA0iuQEKF0F0dGFjaEV4ZWN1dGlvblJlc3BvbnNlEhIKCnNlc3Npb25faWQYASABKAkSFQoNc2Vzc2lvbl90b2tlbhgCIAEoCRIuCgpleHBpcmVzX2F0GAMgASgLMhouZ29vZ2xlLnByb3RvYnVmLlRpbWVzdGFtcBIVCg1xdWljX2VuZHBvaW50GAQgASgJEgwKBGFscG4YBSABKAkSHgoWc2VydmVyX2NlcnRfcGluX3NoYTI1NhgGIAEoCSI/ChNHZXRFeGVjdXRpb25SZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSFAoMZXhlY3V0aW9uX2lkGAIgASgJIkIKFEdldEV4ZWN1dGlvblJlc3BvbnNlEioKCWV4ZWN1dGlvbhgBIAEoCzIXLmNsZWFucm9vbS52MS5FeGVjdXRpb24iUQoXSW5zcGVjdEV4ZWN1dGlvblJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCRIUCgxleGVjdXRpb25faWQYAiABKAkSDAoEbGFzdBgDIAEoCCLHAwoYSW5zcGVjdEV4ZWN1dGlvblJlc3BvbnNlEioKCWV4ZWN1dGlvbhgBIAEoCzIXLmNsZWFucm9vbS52MS5FeGVjdXRpb24SDwoHbWVzc2FnZRgCIAEoCRIOCgZzdGRvdXQYAyABKAkSDgoGc3RkZXJyGAQgASgJEhEKCWltYWdlX3JlZhgFIAEoCRIUCgxpbWFnZV9kaWdlc3QYBiABKAkSFQoNYXJ0aWZhY3RzX2RpchgHIAEoCRIRCglwbGFuX3BhdGgYCCABKAkSEwoLbGF1bmNoZWRfdm0YCSABKAgSLgoNb2JzZXJ2YWJpbGl0eRgKIAEoCzIXLmdvb2dsZS5wcm90b2J1Zi5TdHJ1Y3QSEAoIdHJhY2VfaWQYCyABKAkSEQoJdHJhY2VfdXJsGAwgASgJEhMKC3BvbGljeV9oYXNoGA0gASgJEhQKDHN0ZG91dF9ieXRlcxgOIAEoBBIUCgxzdGRlcnJfYnl0ZXMYDyABKAQSHgoWcmV0YWluZWRfYnl0ZXNfZHJvcHBlZBgQIAEoBBIYChBvdXRwdXRfdHJ1bmNhdGVkGBEgASgIEhYKDm91dHB1dF9leHBpcmVkGBIgASgIImwKFkNhbmNlbEV4ZWN1dGlvblJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCRIUCgxleGVjdXRpb25faWQYAiABKAkSFQoNZ3JhY2Vfc2Vjb25kcxgDIAEoDRIRCglpbnRlcnJ1cHQYBCABKAgiRQoXQ2FuY2VsRXhlY3V0aW9uUmVzcG9uc2USKgoJZXhlY3V0aW9uGAEgASgLMhcuY2xlYW5yb29tLnYxLkV4ZWN1dGlvbiJUChpXcml0ZUV4ZWN1dGlvblN0ZGluUmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEhQKDGV4ZWN1dGlvbl9pZBgCIAEoCRIMCgRkYXRhGAMgASgMIjQKG1dyaXRlRXhlY3V0aW9uU3RkaW5SZXNwb25zZRIVCg1ieXRlc193cml0dGVuGAEgASgEIkYKGkNsb3NlRXhlY3V0aW9uU3RkaW5SZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSFAoMZXhlY3V0aW9uX2lkGAIgASgJIh0KG0Nsb3NlRXhlY3V0aW9uU3RkaW5SZXNwb25zZSKbAQoWU3RyZWFtRXhlY3V0aW9uUmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEhQKDGV4ZWN1dGlvbl9pZBgCIAEoCRIWCg5hZnRlcl9zZXF1ZW5jZRgDIAEoBBIVCg1zdGRvdXRfb2Zmc2V0GAQgASgEEhUKDXN0ZGVycl9vZmZzZXQYBSABKAQSEQoJbm9fZm9sbG93GAYgASgIIlcKC091dHB1dENodW5rEioKBnN0cmVhbRgBIAEoDjIaLmNsZWFucm9vbS52MS5PdXRwdXRTdHJlYW0SDgoGb2Zmc2V0GAIgASgEEgwKBGRhdGEYAyABKAwicAoNRXhlY3V0aW9uRXhpdBItCgZzdGF0dXMYASABKA4yHS5jbGVhbnJvb20udjEuRXhlY3V0aW9uU3RhdHVzEhEKCWV4aXRfY29kZRgCIAEoBRIPCgdtZXNzYWdlGAMgASgJEgwKBGNvZGUYBCABKAkiKAoHV2FybmluZxIMCgRjb2RlGAEgASgJEg8KB21lc3NhZ2UYAiABKAkizgIKFEV4ZWN1dGlvblN0cmVhbUV2ZW50EhQKDGV4ZWN1dGlvbl9pZBgBIAEoCRIQCghzZXF1ZW5jZRgCIAEoBBIrCgZvdXRwdXQYAyABKAsyGS5jbGVhbnJvb20udjEuT3V0cHV0Q2h1bmtIABIrCgRleGl0GAQgASgLMhsuY2xlYW5yb29tLnYxLkV4ZWN1dGlvbkV4aXRIABIoCgd3YXJuaW5nGAUgASgLMhUuY2xlYW5yb29tLnYxLldhcm5pbmdIABIrCgdzdGFydGVkGAYgASgLMhguY2xlYW5yb29tLnYxLlJ1blN0YXJ0ZWRIABI6CghmaW5pc2hlZBgHIAEoCzImLmNsZWFucm9vbS52MS5JbnNwZWN0RXhlY3V0aW9uUmVzcG9uc2VIABIWCg5zZXJ2ZXJfdGltZV91cxgIIAEoBEIJCgdwYXlsb2FkIp0BChNSdW5FeGVjdXRpb25SZXF1ZXN0EjcKCWV4ZWN1dGlvbhgBIAEoCzIkLmNsZWFucm9vbS52MS5DcmVhdGVFeGVjdXRpb25SZXF1ZXN0EjIKBmNyZWF0ZRgCIAEoCzIiLmNsZWFucm9vbS52MS5DcmVhdGVTYW5kYm94UmVxdWVzdBIZChF0ZXJtaW5hdGVfb25fZXhpdBgDIAEoCCKdAQoKUnVuU3RhcnRlZBImCgdzYW5kYm94GAEgASgLMhUuY2xlYW5yb29tLnYxLlNhbmRib3gSDwoHY3JlYXRlZBgCIAEoCBIqCglib290c3RyYXAYAyABKAsyFy5jbGVhbnJvb20udjEuQm9vdHN0cmFwEioKCWV4ZWN1dGlvbhgEIAEoCzIXLmNsZWFucm9vbS52MS5FeGVjdXRpb24ipwEKBUltYWdlEg4KBmRpZ2VzdBgBIAEoCRIRCglyZWZlcmVuY2UYAiABKAkSFwoPbWFuaWZlc3RfZGlnZXN0GAMgASgJEhUKDWNvbmZpZ19kaWdlc3QYBCABKAkSDgoGbGF5ZXJzGAUgAygJEgwKBHNpemUYBiABKAQSLQoJcHVsbGVkX2F0GAcgASgLMhouZ29vZ2xlLnByb3RvYnVmLlRpbWVzdGFtcCIlChBQdWxsSW1hZ2VSZXF1ZXN0EhEKCWltYWdlX3JlZhgBIAEoCSI3ChFQdWxsSW1hZ2VSZXNwb25zZRIiCgVpbWFnZRgBIAEoCzITLmNsZWFucm9vbS52MS5JbWFnZSIoChNSZXNvbHZlSW1hZ2VSZXF1ZXN0EhEKCWltYWdlX3JlZhgBIAEoCSI5ChRSZXNvbHZlSW1hZ2VSZXNwb25zZRIRCglyZWZlcmVuY2UYASABKAkSDgoGZGlnZXN0GAIgASgJIhMKEUxpc3RJbWFnZXNSZXF1ZXN0IjkKEkxpc3RJbWFnZXNSZXNwb25zZRIjCgZpbWFnZXMYASADKAsyEy5jbGVhbnJvb20udjEuSW1hZ2UiJAoSUmVtb3ZlSW1hZ2VSZXF1ZXN0Eg4KBmRpZ2VzdBgBIAEoCSI5ChNSZW1vdmVJbWFnZVJlc3BvbnNlEiIKBWltYWdlGAEgASgLMhMuY2xlYW5yb29tLnYxLkltYWdlKrUCCg1TYW5kYm94U3RhdHVzEh4KGlNBTkRCT1hfU1RBVFVTX1VOU1BFQ0lGSUVEEAASHwobU0FOREJPWF9TVEFUVVNfUFJPVklTSU9OSU5HEAESGAoUU0FOREJPWF9TVEFUVVNfUkVBRFkQAhIbChdTQU5EQk9YX1NUQVRVU19TVE9QUElORxADEhoKFlNBTkRCT1hfU1RBVFVTX1NUT1BQRUQQBBIZChVTQU5EQk9YX1NUQVRVU19GQUlMRUQQBRIZChVTQU5EQk9YX1NUQVRVU19QQVVTRUQQKBIgChxTQU5EQk9YX1NUQVRVU19DSEVDS1BPSU5USU5HECkSHwobU0FOREJPWF9TVEFUVVNfQ0hFQ0tQT0lOVEVEECoSFwoTU0FOREJPWF9TVEFUVVNfTE9TVBAyKuoBCg9FeGVjdXRpb25TdGF0dXMSIAocRVhFQ1VUSU9OX1NUQVRVU19VTlNQRUNJRklFRBAAEhsKF0VYRUNVVElPTl9TVEFUVVNfUVVFVUVEEAESHAoYRVhFQ1VUSU9OX1NUQVRVU19SVU5OSU5HEAISHgoaRVhFQ1VUSU9OX1NUQVRVU19TVUNDRUVERUQQAxIbChdFWEVDVVRJT05fU1RBVFVTX0ZBSUxFRBAEEh0KGUVYRUNVVElPTl9TVEFUVVNfQ0FOQ0VMRUQQBRIeChpFWEVDVVRJT05fU1RBVFVTX1RJTUVEX09VVBAGKmkKDUV4ZWN1dGlvbktpbmQSHgoaRVhFQ1VUSU9OX0tJTkRfVU5TUEVDSUZJRUQQABIYChRFWEVDVVRJT05fS0lORF9CQVRDSBABEh4KGkVYRUNVVElPTl9LSU5EX0lOVEVSQUNUSVZFEAIqYQoMT3V0cHV0U3RyZWFtEh0KGU9VVFBVVF9TVFJFQU1fVU5TUEVDSUZJRUQQABIYChRPVVRQVVRfU1RSRUFNX1NURE9VVBABEhgKFE9VVFBVVF9TVFJFQU1fU1RERVJSEAIywwQKDlNhbmRib3hTZXJ2aWNlElgKDUNyZWF0ZVNhbmRib3gSIi5jbGVhbnJvb20udjEuQ3JlYXRlU2FuZGJveFJlcXVlc3QaIy5jbGVhbnJvb20udjEuQ3JlYXRlU2FuZGJveFJlc3BvbnNlEk8KCkdldFNhbmRib3gSHy5jbGVhbnJvb20udjEuR2V0U2FuZGJveFJlcXVlc3QaIC5jbGVhbnJvb20udjEuR2V0U2FuZGJveFJlc3BvbnNlElgKDUxpc3RTYW5kYm94ZXMSIi5jbGVhbnJvb20udjEuTGlzdFNhbmRib3hlc1JlcXVlc3QaIy5jbGVhbnJvb20udjEuTGlzdFNhbmRib3hlc1Jlc3BvbnNlEmoKE0Rvd25sb2FkU2FuZGJveEZpbGUSKC5jbGVhbnJvb20udjEuRG93bmxvYWRTYW5kYm94RmlsZVJlcXVlc3QaKS5jbGVhbnJvb20udjEuRG93bmxvYWRTYW5kYm94RmlsZVJlc3BvbnNlEmEKEFRlcm1pbmF0ZVNhbmRib3gSJS5jbGVhbnJvb20udjEuVGVybWluYXRlU2FuZGJveFJlcXVlc3QaJi5jbGVhbnJvb20udjEuVGVybWluYXRlU2FuZGJveFJlc3BvbnNlEl0KE1N0cmVhbVNhbmRib3hFdmVudHMSKC5jbGVhbnJvb20udjEuU3RyZWFtU2FuZGJveEV2ZW50c1JlcXVlc3QaGi5jbGVhbnJvb20udjEuU2FuZGJveEV2ZW50MAEy/AYKEEV4ZWN1dGlvblNlcnZpY2USXgoPQ3JlYXRlRXhlY3V0aW9uEiQuY2xlYW5yb29tLnYxLkNyZWF0ZUV4ZWN1dGlvblJlcXVlc3QaJS5jbGVhbnJvb20udjEuQ3JlYXRlRXhlY3V0aW9uUmVzcG9uc2USXgoPQXR0YWNoRXhlY3V0aW9uEiQuY2xlYW5yb29tLnYxLkF0dGFjaEV4ZWN1dGlvblJlcXVlc3QaJS5jbGVhbnJvb20udjEuQXR0YWNoRXhlY3V0aW9uUmVzcG9uc2USVQoMR2V0RXhlY3V0aW9uEiEuY2xlYW5yb29tLnYxLkdldEV4ZWN1dGlvblJlcXVlc3QaIi5jbGVhbnJvb20udjEuR2V0RXhlY3V0aW9uUmVzcG9uc2USYQoQSW5zcGVjdEV4ZWN1dGlvbhIlLmNsZWFucm9vbS52MS5JbnNwZWN0RXhlY3V0aW9uUmVxdWVzdBomLmNsZWFucm9vbS52MS5JbnNwZWN0RXhlY3V0aW9uUmVzcG9uc2USXgoPQ2FuY2VsRXhlY3V0aW9uEiQuY2xlYW5yb29tLnYxLkNhbmNlbEV4ZWN1dGlvblJlcXVlc3QaJS5jbGVhbnJvb20udjEuQ2FuY2VsRXhlY3V0aW9uUmVzcG9uc2USagoTV3JpdGVFeGVjdXRpb25TdGRpbhIoLmNsZWFucm9vbS52MS5Xcml0ZUV4ZWN1dGlvblN0ZGluUmVxdWVzdBopLmNsZWFucm9vbS52MS5Xcml0ZUV4ZWN1dGlvblN0ZGluUmVzcG9uc2USagoTQ2xvc2VFeGVjdXRpb25TdGRpbhIoLmNsZWFucm9vbS52MS5DbG9zZUV4ZWN1dGlvblN0ZGluUmVxdWVzdBopLmNsZWFucm9vbS52MS5DbG9zZUV4ZWN1dGlvblN0ZGluUmVzcG9uc2USXQoPU3RyZWFtRXhlY3V0aW9uEiQuY2xlYW5yb29tLnYxLlN0cmVhbUV4ZWN1dGlvblJlcXVlc3QaIi5jbGVhbnJvb20udjEuRXhlY3V0aW9uU3RyZWFtRXZlbnQwARJXCgxSdW5FeGVjdXRpb24SIS5jbGVhbnJvb20udjEuUnVuRXhlY3V0aW9uUmVxdWVzdBoiLmNsZWFucm9vbS52MS5FeGVjdXRpb25TdHJlYW1FdmVudDABMtgCCgxJbWFnZVNlcnZpY2USTAoJUHVsbEltYWdlEh4uY2xlYW5yb29tLnYxLlB1bGxJbWFnZVJlcXVlc3QaHy5jbGVhbnJvb20udjEuUHVsbEltYWdlUmVzcG9uc2USVQoMUmVzb2x2ZUltYWdlEiEuY2xlYW5yb29tLnYxLlJlc29sdmVJbWFnZVJlcXVlc3QaIi5jbGVhbnJvb20udjEuUmVzb2x2ZUltYWdlUmVzcG9uc2USTwoKTGlzdEltYWdlcxIfLmNsZWFucm9vbS52MS5MaXN0SW1hZ2VzUmVxdWVzdBogLmNsZWFucm9vbS52MS5MaXN0SW1hZ2VzUmVzcG9uc2USUgoLUmVtb3ZlSW1hZ2USIC5jbGVhbnJvb20udjEuUmVtb3ZlSW1hZ2VSZXF1ZXN0GiEuY2xlYW5yb29tLnYxLlJlbW92ZUltYWdlUmVzcG9uc2ViBnByb3RvMw", [file_google_protobuf_struct, file_google_protobuf_timestamp, file_cleanroom_v1_usage, file_cleanroom_v1_inbound]);
/**
 * Describes the message cleanroom.v1.ErrorDetail.
 * Use `create(ErrorDetailSchema)` to create a new message.
 */
export const ErrorDetailSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 0);
/**
 * Describes the message cleanroom.v1.Sandbox.
 * Use `create(SandboxSchema)` to create a new message.
 */
export const SandboxSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 1);
/**
 * Describes the message cleanroom.v1.Execution.
 * Use `create(ExecutionSchema)` to create a new message.
 */
export const ExecutionSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 2);
/**
 * Describes the message cleanroom.v1.CreateSandboxRequest.
 * Use `create(CreateSandboxRequestSchema)` to create a new message.
 */
export const CreateSandboxRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 3);
/**
 * Describes the message cleanroom.v1.VolumeMount.
 * Use `create(VolumeMountSchema)` to create a new message.
 */
export const VolumeMountSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 4);
/**
 * Describes the message cleanroom.v1.ResourceLimits.
 * Use `create(ResourceLimitsSchema)` to create a new message.
 */
export const ResourceLimitsSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 5);
/**
 * Describes the message cleanroom.v1.CreateSandboxResponse.
 * Use `create(CreateSandboxResponseSchema)` to create a new message.
 */
export const CreateSandboxResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 6);
/**
 * Describes the message cleanroom.v1.Bootstrap.
 * Use `create(BootstrapSchema)` to create a new message.
 */
export const BootstrapSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 7);
/**
 * Describes the message cleanroom.v1.GetSandboxRequest.
 * Use `create(GetSandboxRequestSchema)` to create a new message.
 */
export const GetSandboxRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 8);
/**
 * Describes the message cleanroom.v1.GetSandboxResponse.
 * Use `create(GetSandboxResponseSchema)` to create a new message.
 */
export const GetSandboxResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 9);
/**
 * Describes the message cleanroom.v1.ListSandboxesRequest.
 * Use `create(ListSandboxesRequestSchema)` to create a new message.
 */
export const ListSandboxesRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 10);
/**
 * Describes the message cleanroom.v1.ListSandboxesResponse.
 * Use `create(ListSandboxesResponseSchema)` to create a new message.
 */
export const ListSandboxesResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 11);
/**
 * Describes the message cleanroom.v1.DownloadSandboxFileRequest.
 * Use `create(DownloadSandboxFileRequestSchema)` to create a new message.
 */
export const DownloadSandboxFileRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 12);
/**
 * Describes the message cleanroom.v1.DownloadSandboxFileResponse.
 * Use `create(DownloadSandboxFileResponseSchema)` to create a new message.
 */
export const DownloadSandboxFileResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 13);
/**
 * Describes the message cleanroom.v1.TerminateSandboxRequest.
 * Use `create(TerminateSandboxRequestSchema)` to create a new message.
 */
export const TerminateSandboxRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 14);
/**
 * Describes the message cleanroom.v1.TerminateSandboxResponse.
 * Use `create(TerminateSandboxResponseSchema)` to create a new message.
 */
export const TerminateSandboxResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 15);
/**
 * Describes the message cleanroom.v1.StreamSandboxEventsRequest.
 * Use `create(StreamSandboxEventsRequestSchema)` to create a new message.
 */
export const StreamSandboxEventsRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 16);
/**
 * Describes the message cleanroom.v1.SandboxEvent.
 * Use `create(SandboxEventSchema)` to create a new message.
 */
export const SandboxEventSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 17);
/**
 * Describes the message cleanroom.v1.CreateExecutionRequest.
 * Use `create(CreateExecutionRequestSchema)` to create a new message.
 */
export const CreateExecutionRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 18);
/**
 * Describes the message cleanroom.v1.CreateExecutionResponse.
 * Use `create(CreateExecutionResponseSchema)` to create a new message.
 */
export const CreateExecutionResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 19);
/**
 * Describes the message cleanroom.v1.AttachExecutionRequest.
 * Use `create(AttachExecutionRequestSchema)` to create a new message.
 */
export const AttachExecutionRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 20);
/**
 * Describes the message cleanroom.v1.AttachExecutionResponse.
 * Use `create(AttachExecutionResponseSchema)` to create a new message.
 */
export const AttachExecutionResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 21);
/**
 * Describes the message cleanroom.v1.GetExecutionRequest.
 * Use `create(GetExecutionRequestSchema)` to create a new message.
 */
export const GetExecutionRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 22);
/**
 * Describes the message cleanroom.v1.GetExecutionResponse.
 * Use `create(GetExecutionResponseSchema)` to create a new message.
 */
export const GetExecutionResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 23);
/**
 * Describes the message cleanroom.v1.InspectExecutionRequest.
 * Use `create(InspectExecutionRequestSchema)` to create a new message.
 */
export const InspectExecutionRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 24);
/**
 * Describes the message cleanroom.v1.InspectExecutionResponse.
 * Use `create(InspectExecutionResponseSchema)` to create a new message.
 */
export const InspectExecutionResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 25);
/**
 * Describes the message cleanroom.v1.CancelExecutionRequest.
 * Use `create(CancelExecutionRequestSchema)` to create a new message.
 */
export const CancelExecutionRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 26);
/**
 * Describes the message cleanroom.v1.CancelExecutionResponse.
 * Use `create(CancelExecutionResponseSchema)` to create a new message.
 */
export const CancelExecutionResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 27);
/**
 * Describes the message cleanroom.v1.WriteExecutionStdinRequest.
 * Use `create(WriteExecutionStdinRequestSchema)` to create a new message.
 */
export const WriteExecutionStdinRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 28);
/**
 * Describes the message cleanroom.v1.WriteExecutionStdinResponse.
 * Use `create(WriteExecutionStdinResponseSchema)` to create a new message.
 */
export const WriteExecutionStdinResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 29);
/**
 * Describes the message cleanroom.v1.CloseExecutionStdinRequest.
 * Use `create(CloseExecutionStdinRequestSchema)` to create a new message.
 */
export const CloseExecutionStdinRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 30);
/**
 * Describes the message cleanroom.v1.CloseExecutionStdinResponse.
 * Use `create(CloseExecutionStdinResponseSchema)` to create a new message.
 */
export const CloseExecutionStdinResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 31);
/**
 * Describes the message cleanroom.v1.StreamExecutionRequest.
 * Use `create(StreamExecutionRequestSchema)` to create a new message.
 */
export const StreamExecutionRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 32);
/**
 * Describes the message cleanroom.v1.OutputChunk.
 * Use `create(OutputChunkSchema)` to create a new message.
 */
export const OutputChunkSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 33);
/**
 * Describes the message cleanroom.v1.ExecutionExit.
 * Use `create(ExecutionExitSchema)` to create a new message.
 */
export const ExecutionExitSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 34);
/**
 * Describes the message cleanroom.v1.Warning.
 * Use `create(WarningSchema)` to create a new message.
 */
export const WarningSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 35);
/**
 * Describes the message cleanroom.v1.ExecutionStreamEvent.
 * Use `create(ExecutionStreamEventSchema)` to create a new message.
 */
export const ExecutionStreamEventSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 36);
/**
 * Describes the message cleanroom.v1.RunExecutionRequest.
 * Use `create(RunExecutionRequestSchema)` to create a new message.
 */
export const RunExecutionRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 37);
/**
 * Describes the message cleanroom.v1.RunStarted.
 * Use `create(RunStartedSchema)` to create a new message.
 */
export const RunStartedSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 38);
/**
 * Describes the message cleanroom.v1.Image.
 * Use `create(ImageSchema)` to create a new message.
 */
export const ImageSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 39);
/**
 * Describes the message cleanroom.v1.PullImageRequest.
 * Use `create(PullImageRequestSchema)` to create a new message.
 */
export const PullImageRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 40);
/**
 * Describes the message cleanroom.v1.PullImageResponse.
 * Use `create(PullImageResponseSchema)` to create a new message.
 */
export const PullImageResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 41);
/**
 * Describes the message cleanroom.v1.ResolveImageRequest.
 * Use `create(ResolveImageRequestSchema)` to create a new message.
 */
export const ResolveImageRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 42);
/**
 * Describes the message cleanroom.v1.ResolveImageResponse.
 * Use `create(ResolveImageResponseSchema)` to create a new message.
 */
export const ResolveImageResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 43);
/**
 * Describes the message cleanroom.v1.ListImagesRequest.
 * Use `create(ListImagesRequestSchema)` to create a new message.
 */
export const ListImagesRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 44);
/**
 * Describes the message cleanroom.v1.ListImagesResponse.
 * Use `create(ListImagesResponseSchema)` to create a new message.
 */
export const ListImagesResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 45);
/**
 * Describes the message cleanroom.v1.RemoveImageRequest.
 * Use `create(RemoveImageRequestSchema)` to create a new message.
 */
export const RemoveImageRequestSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 46);
/**
 * Describes the message cleanroom.v1.RemoveImageResponse.
 * Use `create(RemoveImageResponseSchema)` to create a new message.
 */
export const RemoveImageResponseSchema = /*@__PURE__*/ messageDesc(file_cleanroom_v1_cleanroom, 47);
/**
 * @generated from enum cleanroom.v1.SandboxStatus
 */
export var SandboxStatus;
(function (SandboxStatus) {
    /**
     * @generated from enum value: SANDBOX_STATUS_UNSPECIFIED = 0;
     */
    SandboxStatus[SandboxStatus["UNSPECIFIED"] = 0] = "UNSPECIFIED";
    /**
     * @generated from enum value: SANDBOX_STATUS_PROVISIONING = 1;
     */
    SandboxStatus[SandboxStatus["PROVISIONING"] = 1] = "PROVISIONING";
    /**
     * @generated from enum value: SANDBOX_STATUS_READY = 2;
     */
    SandboxStatus[SandboxStatus["READY"] = 2] = "READY";
    /**
     * @generated from enum value: SANDBOX_STATUS_STOPPING = 3;
     */
    SandboxStatus[SandboxStatus["STOPPING"] = 3] = "STOPPING";
    /**
     * @generated from enum value: SANDBOX_STATUS_STOPPED = 4;
     */
    SandboxStatus[SandboxStatus["STOPPED"] = 4] = "STOPPED";
    /**
     * @generated from enum value: SANDBOX_STATUS_FAILED = 5;
     */
    SandboxStatus[SandboxStatus["FAILED"] = 5] = "FAILED";
    /**
     * Every process frozen (cgroup freezer); ResumeSandbox continues it.
     *
     * @generated from enum value: SANDBOX_STATUS_PAUSED = 40;
     */
    SandboxStatus[SandboxStatus["PAUSED"] = 40] = "PAUSED";
    /**
     * A process checkpoint is being written.
     *
     * @generated from enum value: SANDBOX_STATUS_CHECKPOINTING = 41;
     */
    SandboxStatus[SandboxStatus["CHECKPOINTING"] = 41] = "CHECKPOINTING";
    /**
     * The sandbox's processes were checkpointed and stopped.
     *
     * @generated from enum value: SANDBOX_STATUS_CHECKPOINTED = 42;
     */
    SandboxStatus[SandboxStatus["CHECKPOINTED"] = 42] = "CHECKPOINTED";
    /**
     * Cluster (docs/cluster.md): the sandbox's host left the cluster without leaving (its
     * membership lease expired). Shown by the other members, with a `host_lost` event;
     * calls for it fail `host_lost` until the host returns.
     *
     * @generated from enum value: SANDBOX_STATUS_LOST = 50;
     */
    SandboxStatus[SandboxStatus["LOST"] = 50] = "LOST";
})(SandboxStatus || (SandboxStatus = {}));
/**
 * Describes the enum cleanroom.v1.SandboxStatus.
 */
export const SandboxStatusSchema = /*@__PURE__*/ enumDesc(file_cleanroom_v1_cleanroom, 0);
/**
 * @generated from enum cleanroom.v1.ExecutionStatus
 */
export var ExecutionStatus;
(function (ExecutionStatus) {
    /**
     * @generated from enum value: EXECUTION_STATUS_UNSPECIFIED = 0;
     */
    ExecutionStatus[ExecutionStatus["UNSPECIFIED"] = 0] = "UNSPECIFIED";
    /**
     * @generated from enum value: EXECUTION_STATUS_QUEUED = 1;
     */
    ExecutionStatus[ExecutionStatus["QUEUED"] = 1] = "QUEUED";
    /**
     * @generated from enum value: EXECUTION_STATUS_RUNNING = 2;
     */
    ExecutionStatus[ExecutionStatus["RUNNING"] = 2] = "RUNNING";
    /**
     * @generated from enum value: EXECUTION_STATUS_SUCCEEDED = 3;
     */
    ExecutionStatus[ExecutionStatus["SUCCEEDED"] = 3] = "SUCCEEDED";
    /**
     * @generated from enum value: EXECUTION_STATUS_FAILED = 4;
     */
    ExecutionStatus[ExecutionStatus["FAILED"] = 4] = "FAILED";
    /**
     * @generated from enum value: EXECUTION_STATUS_CANCELED = 5;
     */
    ExecutionStatus[ExecutionStatus["CANCELED"] = 5] = "CANCELED";
    /**
     * @generated from enum value: EXECUTION_STATUS_TIMED_OUT = 6;
     */
    ExecutionStatus[ExecutionStatus["TIMED_OUT"] = 6] = "TIMED_OUT";
})(ExecutionStatus || (ExecutionStatus = {}));
/**
 * Describes the enum cleanroom.v1.ExecutionStatus.
 */
export const ExecutionStatusSchema = /*@__PURE__*/ enumDesc(file_cleanroom_v1_cleanroom, 1);
/**
 * @generated from enum cleanroom.v1.ExecutionKind
 */
export var ExecutionKind;
(function (ExecutionKind) {
    /**
     * @generated from enum value: EXECUTION_KIND_UNSPECIFIED = 0;
     */
    ExecutionKind[ExecutionKind["UNSPECIFIED"] = 0] = "UNSPECIFIED";
    /**
     * @generated from enum value: EXECUTION_KIND_BATCH = 1;
     */
    ExecutionKind[ExecutionKind["BATCH"] = 1] = "BATCH";
    /**
     * @generated from enum value: EXECUTION_KIND_INTERACTIVE = 2;
     */
    ExecutionKind[ExecutionKind["INTERACTIVE"] = 2] = "INTERACTIVE";
})(ExecutionKind || (ExecutionKind = {}));
/**
 * Describes the enum cleanroom.v1.ExecutionKind.
 */
export const ExecutionKindSchema = /*@__PURE__*/ enumDesc(file_cleanroom_v1_cleanroom, 2);
/**
 * @generated from enum cleanroom.v1.OutputStream
 */
export var OutputStream;
(function (OutputStream) {
    /**
     * @generated from enum value: OUTPUT_STREAM_UNSPECIFIED = 0;
     */
    OutputStream[OutputStream["UNSPECIFIED"] = 0] = "UNSPECIFIED";
    /**
     * @generated from enum value: OUTPUT_STREAM_STDOUT = 1;
     */
    OutputStream[OutputStream["STDOUT"] = 1] = "STDOUT";
    /**
     * @generated from enum value: OUTPUT_STREAM_STDERR = 2;
     */
    OutputStream[OutputStream["STDERR"] = 2] = "STDERR";
})(OutputStream || (OutputStream = {}));
/**
 * Describes the enum cleanroom.v1.OutputStream.
 */
export const OutputStreamSchema = /*@__PURE__*/ enumDesc(file_cleanroom_v1_cleanroom, 3);
/**
 * Lifecycle of sandboxes: create, look up, list, terminate, tail events.
 *
 * @generated from service cleanroom.v1.SandboxService
 */
export const SandboxService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_cleanroom, 0);
/**
 * Command runs inside a sandbox and their durable output.
 *
 * @generated from service cleanroom.v1.ExecutionService
 */
export const ExecutionService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_cleanroom, 1);
/**
 * OCI images in the server's cache, keyed by the digest they are pinned by.
 * Errors: `policy_invalid` (not digest pinned), `image_not_found`,
 * `image_digest_mismatch`, `registry_unavailable`, `registry_unauthorized`,
 * `image_unsupported`, `image_layer_unsafe`, `image_in_use`.
 *
 * @generated from service cleanroom.v1.ImageService
 */
export const ImageService = /*@__PURE__*/ serviceDesc(file_cleanroom_v1_cleanroom, 2);
