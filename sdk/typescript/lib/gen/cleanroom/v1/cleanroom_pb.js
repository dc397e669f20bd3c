// Cleanroom control API, v1.
//
// Source of truth for the contract between `cleanroom serve` and every client.
// Shapes follow the control-API design (seed 000): two services, unary
// lifecycle RPCs, server-streaming for durable execution output and event tails.
import { enumDesc, fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
import { file_google_protobuf_struct, file_google_protobuf_timestamp } from "@bufbuild/protobuf/wkt";
import { file_cleanroom_v1_usage } from "./usage_pb.js";
/**
 * Describes the file cleanroom/v1/cleanroom.proto.
 */
export const file_cleanroom_v1_cleanroom = /*@__PURE__*/ fileDesc("ChxjbGVhbnJvb20vdjEvY2xlYW5yb29tLnByb3RvEgxjbGVhbnJvb20udjEilQEKC0Vycm9yRGV0YWlsEgwKBGNvZGUYASABKAkSDwoHbWVzc2FnZRgCIAEoCRI3CgdkZXRhaWxzGAMgAygLMiYuY2xlYW5yb29tLnYxLkVycm9yRGV0YWlsLkRldGFpbHNFbnRyeRouCgxEZXRhaWxzRW50cnkSCwoDa2V5GAEgASgJEg0KBXZhbHVlGAIgASgJOgI4ASLqBgoHU2FuZGJveBISCgpzYW5kYm94X2lkGAEgASgJEisKBnN0YXR1cxgCIAEoDjIbLmNsZWFucm9vbS52MS5TYW5kYm94U3RhdHVzEg8KB2JhY2tlbmQYAyABKAkSEwoLcG9saWN5X2hhc2gYBCABKAkSLgoKY3JlYXRlZF9hdBgFIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASLgoKdXBkYXRlZF9hdBgGIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASGQoRbGFzdF9leGVjdXRpb25faWQYByABKAkSGwoTYWN0aXZlX2V4ZWN1dGlvbl9pZBgIIAEoCRIPCgdtZXNzYWdlGAkgASgJEhEKCWltYWdlX3JlZhgKIAEoCRIUCgxpbWFnZV9kaWdlc3QYCyABKAkSLQoMYmFja2VuZF9pbmZvGAwgASgLMhcuZ29vZ2xlLnByb3RvYnVmLlN0cnVjdBIxCgZsYWJlbHMYDSADKAsyIS5jbGVhbnJvb20udjEuU2FuZGJveC5MYWJlbHNFbnRyeRIYCg9lZ3Jlc3NfYXBwcm92ZWQY3AEgAygJEhcKDmVncmVzc19yZWZ1c2VkGN0BIAMoCRIUCgtlZ3Jlc3NfYXNrcxjeASABKAgSLgoKZXhwaXJlc19hdBh4IAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASEwoLdHRsX3NlY29uZHMYeSABKAQSHAoUaWRsZV90aW1lb3V0X3NlY29uZHMYeiABKAQSNAoQbGFzdF9hY3Rpdml0eV9hdBh7IAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASEwoLc3RvcF9yZWFzb24YfCABKAkSKQoFdXNhZ2UYfSABKAsyGi5jbGVhbnJvb20udjEuU2FuZGJveFVzYWdlEhkKEGFnZW50X3B1YmxpY19rZXkYtAEgASgJEhkKEGRlbGVnYXRpb25fY2hhaW4YtQEgAygJEhAKB3Bvb2xfaWQYtgEgASgJEisKB3ZvbHVtZXMY5gEgAygLMhkuY2xlYW5yb29tLnYxLlZvbHVtZU1vdW50Gi0KC0xhYmVsc0VudHJ5EgsKA2tleRgBIAEoCRINCgV2YWx1ZRgCIAEoCToCOAEigQMKCUV4ZWN1dGlvbhIUCgxleGVjdXRpb25faWQYASABKAkSEgoKc2FuZGJveF9pZBgCIAEoCRItCgZzdGF0dXMYAyABKA4yHS5jbGVhbnJvb20udjEuRXhlY3V0aW9uU3RhdHVzEg8KB2NvbW1hbmQYBCADKAkSEQoJZXhpdF9jb2RlGAUgASgFEi4KCnN0YXJ0ZWRfYXQYBiABKAsyGi5nb29nbGUucHJvdG9idWYuVGltZXN0YW1wEi8KC2ZpbmlzaGVkX2F0GAcgASgLMhouZ29vZ2xlLnByb3RvYnVmLlRpbWVzdGFtcBILCgN0dHkYCCABKAgSKQoEa2luZBgKIAEoDjIbLmNsZWFucm9vbS52MS5FeGVjdXRpb25LaW5kEg8KB21lc3NhZ2UYCyABKAkSCwoDY3dkGAwgASgJEi4KCmNyZWF0ZWRfYXQYDSABKAsyGi5nb29nbGUucHJvdG9idWYuVGltZXN0YW1wEhAKCHRyYWNlX2lkGA4gASgJIukEChRDcmVhdGVTYW5kYm94UmVxdWVzdBITCgtwb2xpY3lfeWFtbBgBIAEoCRIRCglpbWFnZV9yZWYYAiABKAkSFwoPaWRlbXBvdGVuY3lfa2V5GAMgASgJEj4KBmxhYmVscxgEIAMoCzIuLmNsZWFucm9vbS52MS5DcmVhdGVTYW5kYm94UmVxdWVzdC5MYWJlbHNFbnRyeRIsCgZsaW1pdHMYBSABKAsyHC5jbGVhbnJvb20udjEuUmVzb3VyY2VMaW1pdHMSDgoFbGVhcm4Y3AEgASgIEkUKCWxvY2tmaWxlcxjIASADKAsyMS5jbGVhbnJvb20udjEuQ3JlYXRlU2FuZGJveFJlcXVlc3QuTG9ja2ZpbGVzRW50cnkSEwoLdHRsX3NlY29uZHMYeCABKAQSHAoUaWRsZV90aW1lb3V0X3NlY29uZHMYeSABKAQSFgoNZnJvbV9zbmFwc2hvdBigASABKAkSGAoPZnJvbV9jaGVja3BvaW50GKEBIAEoCRIZChBhZ2VudF9wdWJsaWNfa2V5GLQBIAEoCRIZChBkZWxlZ2F0aW9uX2NoYWluGLUBIAMoCRIQCgdub19wb29sGLYBIAEoCBIQCgdydW50aW1lGPABIAEoCRIrCgd2b2x1bWVzGOYBIAMoCzIZLmNsZWFucm9vbS52MS5Wb2x1bWVNb3VudBotCgtMYWJlbHNFbnRyeRILCgNrZXkYASABKAkSDQoFdmFsdWUYAiABKAk6AjgBGjAKDkxvY2tmaWxlc0VudHJ5EgsKA2tleRgBIAEoCRINCgV2YWx1ZRgCIAEoDDoCOAEiPAoLVm9sdW1lTW91bnQSDAoEbmFtZRgBIAEoCRIMCgRwYXRoGAIgASgJEhEKCXJlYWRfb25seRgDIAEoCCJyCg5SZXNvdXJjZUxpbWl0cxIUCgxtZW1vcnlfYnl0ZXMYASABKAQSDAoEcGlkcxgCIAEoBBISCgpjcHVfbWlsbGlzGAMgASgEEhIKCmRpc2tfYnl0ZXMYBCABKAQSFAoMb3V0cHV0X2J5dGVzGAUgASgEImsKFUNyZWF0ZVNhbmRib3hSZXNwb25zZRImCgdzYW5kYm94GAEgASgLMhUuY2xlYW5yb29tLnYxLlNhbmRib3gSKgoJYm9vdHN0cmFwGAIgASgLMhcuY2xlYW5yb29tLnYxLkJvb3RzdHJhcCJCCglCb290c3RyYXASFwoPcmVwb3NpdG9yeV9wYXRoGAEgASgJEhwKFGRlcGVuZGVuY2llc19jb21tYW5kGAIgAygJIicKEUdldFNhbmRib3hSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkiPAoSR2V0U2FuZGJveFJlc3BvbnNlEiYKB3NhbmRib3gYASABKAsyFS5jbGVhbnJvb20udjEuU2FuZGJveCKwAQoUTGlzdFNhbmRib3hlc1JlcXVlc3QSFwoPaW5jbHVkZV9zdG9wcGVkGAEgASgIEj4KBmxhYmVscxgCIAMoCzIuLmNsZWFucm9vbS52MS5MaXN0U2FuZGJveGVzUmVxdWVzdC5MYWJlbHNFbnRyeRIQCghvbmx5X293bhgDIAEoCBotCgtMYWJlbHNFbnRyeRILCgNrZXkYASABKAkSDQoFdmFsdWUYAiABKAk6AjgBIkEKFUxpc3RTYW5kYm94ZXNSZXNwb25zZRIoCglzYW5kYm94ZXMYASADKAsyFS5jbGVhbnJvb20udjEuU2FuZGJveCJRChpEb3dubG9hZFNhbmRib3hGaWxlUmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEgwKBHBhdGgYAiABKAkSEQoJbWF4X2J5dGVzGAMgASgEIl0KG0Rvd25sb2FkU2FuZGJveEZpbGVSZXNwb25zZRIMCgRwYXRoGAEgASgJEg8KB2NvbnRlbnQYAiABKAwSDAoEc2l6ZRgDIAEoBBIRCgl0cnVuY2F0ZWQYBCABKAgiQgoXVGVybWluYXRlU2FuZGJveFJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCRITCgpiYWNrZ3JvdW5kGPABIAEoCCJCChhUZXJtaW5hdGVTYW5kYm94UmVzcG9uc2USJgoHc2FuZGJveBgBIAEoCzIVLmNsZWFucm9vbS52MS5TYW5kYm94IlgKGlN0cmVhbVNhbmRib3hFdmVudHNSZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSFgoOYWZ0ZXJfc2VxdWVuY2UYAiABKAQSDgoGZm9sbG93GAMgASgIIqwCCgxTYW5kYm94RXZlbnQSEAoIc2VxdWVuY2UYASABKAQSEgoKc2FuZGJveF9pZBgCIAEoCRIUCgxleGVjdXRpb25faWQYAyABKAkSDAoEdHlwZRgEIAEoCRImCgJhdBgFIAEoCzIaLmdvb2dsZS5wcm90b2J1Zi5UaW1lc3RhbXASMwoOc2FuZGJveF9zdGF0dXMYBiABKA4yGy5jbGVhbnJvb20udjEuU2FuZGJveFN0YXR1cxI3ChBleGVjdXRpb25fc3RhdHVzGAcgASgOMh0uY2xlYW5yb29tLnYxLkV4ZWN1dGlvblN0YXR1cxIPCgdtZXNzYWdlGAggASgJEisKCmF0dHJpYnV0ZXMYCSABKAsyFy5nb29nbGUucHJvdG9idWYuU3RydWN0Ir8CChZDcmVhdGVFeGVjdXRpb25SZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSDwoHY29tbWFuZBgCIAMoCRI6CgNlbnYYAyADKAsyLS5jbGVhbnJvb20udjEuQ3JlYXRlRXhlY3V0aW9uUmVxdWVzdC5FbnZFbnRyeRILCgNjd2QYBCABKAkSFwoPdGltZW91dF9zZWNvbmRzGAUgASgNEikKBGtpbmQYBiABKA4yGy5jbGVhbnJvb20udjEuRXhlY3V0aW9uS2luZBILCgN0dHkYByABKAgSFAoMYXR0YWNoX3N0ZGluGAggASgIEhEKCHR0eV9jb2xzGIwBIAEoDRIRCgh0dHlfcm93cxiNASABKA0aKgoIRW52RW50cnkSCwoDa2V5GAEgASgJEg0KBXZhbHVlGAIgASgJOgI4ASJFChdDcmVhdGVFeGVjdXRpb25SZXNwb25zZRIqCglleGVjdXRpb24YASABKAsyFy5jbGVhbnJvb20udjEuRXhlY3V0aW9uIm4KFkF0dGFjaEV4ZWN1dGlvblJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCRIUCgxleGVjdXRpb25faWQYAiABKAkSFAoMaW5pdGlhbF9jb2xzGAMgASgNEhQKDGluaXRpYWxfcm93cxgEIAEoDSK5AQoXQXR0YWNoRXhlY3V0aW9uUmVzcG9uc2USEgoKc2Vzc2lvbl9pZBgBIAEoCRIVCg1zZXNzaW9uX3Rva2VuGAIgASgJEi4KCmV4cGlyZXNfYXQYAyABKAsyGi5nb29nbGUucHJvdG9idWYuVGltZXN0YW1wEhUKDXF1aWNfZW5kcG9pbnQYBCABKAkSDAoEYWxwbhgFIAEoCRIeChZzZXJ2ZXJfY2VydF9waW5fc2hhMjU2GAYgASgJIj8KE0dldEV4ZWN1dGlvblJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCRIUCgxleGVjdXRpb25faWQYAiABKAkiQgoUR2V0RXhlY3V0aW9uUmVzcG9uc2USKgoJZXhlY3V0aW9uGAEgASgLMhcuY2xlYW5yb29tLnYxLkV4ZWN1dGlvbiJRChdJbnNwZWN0RXhlY3V0aW9uUmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEhQKDGV4ZWN1dGlvbl9pZBgCIAEoCRIMCgRsYXN0GAMgASgIIscDChhJbnNwZWN0RXhlY3V0aW9uUmVzcG9uc2USKgoJZXhlY3V0aW9uGAEgASgLMhcuY2xlYW5yb29tLnYxLkV4ZWN1dGlvbhIPCgdtZXNzYWdlGAIgASgJEg4KBnN0ZG91dBgDIAEoCRIOCgZzdGRlcnIYBCABKAkSEQoJaW1hZ2VfcmVmGAUgASgJEhQKDGltYWdlX2RpZ2VzdBgGIAEoCRIVCg1hcnRpZmFjdHNfZGlyGAcgASgJEhEKCXBsYW5fcGF0aBgIIAEoCRITCgtsYXVuY2hlZF92bRgJIAEoCBIuCg1vYnNlcnZhYmlsaXR5GAogASgLMhcuZ29vZ2xlLnByb3RvYnVmLlN0cnVjdBIQCgh0cmFjZV9pZBgLIAEoCRIRCgl0cmFjZV91cmwYDCABKAkSEwoLcG9saWN5X2hhc2gYDSABKAkSFAoMc3Rkb3V0X2J5dGVzGA4gASgEEhQKDHN0ZGVycl9ieXRlcxgPIAEoBBIeChZyZXRhaW5lZF9ieXRlc19kcm9wcGVkGBAgASgEEhgKEG91dHB1dF90cnVuY2F0ZWQYESABKAgSFgoOb3V0cHV0X2V4cGlyZWQYEiABKAgibAoWQ2FuY2VsRXhlY3V0aW9uUmVxdWVzdBISCgpzYW5kYm94X2lkGAEgASgJEhQKDGV4ZWN1dGlvbl9pZBgCIAEoCRIVCg1ncmFjZV9zZWNvbmRzGAMgASgNEhEKCWludGVycnVwdBgEIAEoCCJFChdDYW5jZWxFeGVjdXRpb25SZXNwb25zZRIqCglleGVjdXRpb24YASABKAsyFy5jbGVhbnJvb20udjEuRXhlY3V0aW9uIlQKGldyaXRlRXhlY3V0aW9uU3RkaW5SZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSFAoMZXhlY3V0aW9uX2lkGAIgASgJEgwKBGRhdGEYAyABKAwiNAobV3JpdGVFeGVjdXRpb25TdGRpblJlc3BvbnNlEhUKDWJ5dGVzX3dyaXR0ZW4YASABKAQiRgoaQ2xvc2VFeGVjdXRpb25TdGRpblJlcXVlc3QSEgoKc2FuZGJveF9pZBgBIAEoCRIUCgxleGVjdXRpb25faWQYAiABKAkiHQobQ2xvc2VFeGVjdXRpb25TdGRpblJlc3BvbnNlIpsBChZTdHJlYW1FeGVjdXRpb25SZXF1ZXN0EhIKCnNhbmRib3hfaWQYASABKAkSFAoMZXhlY3V0aW9uX2lkGAIgASgJEhYKDmFmdGVyX3NlcXVlbmNlGAMgASgEEhUKDXN0ZG91dF9vZmZzZXQYBCABKAQSFQoNc3RkZXJyX29mZnNldBgFIAEoBBIRCglub19mb2xsb3cYBiABKAgiVwoLT3V0cHV0Q2h1bmsSKgoGc3RyZWFtGAEgASgOMhouY2xlYW5yb29tLnYxLk91dHB1dFN0cmVhbRIOCgZvZmZzZXQYAiABKAQSDAoEZGF0YRgDIAEoDCJwCg1FeGVjdXRpb25FeGl0Ei0KBnN0YXR1cxgBIAEoDjIdLmNsZWFucm9vbS52MS5FeGVjdXRpb25TdGF0dXMSEQoJZXhpdF9jb2RlGAIgASgFEg8KB21lc3NhZ2UYAyABKAkSDAoEY29kZRgEIAEoCSIoCgdXYXJuaW5nEgwKBGNvZGUYASABKAkSDwoHbWVzc2FnZRgCIAEoCSLOAgoURXhlY3V0aW9uU3RyZWFtRXZlbnQSFAoMZXhlY3V0aW9uX2lkGAEgASgJEhAKCHNlcXVlbmNlGAIgASgEEisKBm91dHB1dBgDIAEoCzIZLmNsZWFucm9vbS52MS5PdXRwdXRDaHVua0gAEisKBGV4aXQYBCABKAsyGy5jbGVhbnJvb20udjEuRXhlY3V0aW9uRXhpdEgAEigKB3dhcm5pbmcYBSABKAsyFS5jbGVhbnJvb20udjEuV2FybmluZ0gAEisKB3N0YXJ0ZWQYBiABKAsyGC5jbGVhbnJvb20udjEuUnVuU3RhcnRlZEgAEjoKCGZpbmlzaGVkGAcgASgLMiYuY2xlYW5yb29tLnYxLkluc3BlY3RFeGVjdXRpb25SZXNwb25zZUgAEhYKDnNlcnZlcl90aW1lX3VzGAggASgEQgkKB3BheWxvYWQinQEKE1J1bkV4ZWN1dGlvblJlcXVlc3QSNwoJZXhlY3V0aW9uGAEgASgLMiQuY2xlYW5yb29tLnYxLkNyZWF0ZUV4ZWN1dGlvblJlcXVlc3QSMgoGY3JlYXRlGAIgASgLMiIuY2xlYW5yb29tLnYxLkNyZWF0ZVNhbmRib3hSZXF1ZXN0EhkKEXRlcm1pbmF0ZV9vbl9leGl0GAMgASgIIp0BCgpSdW5TdGFydGVkEiYKB3NhbmRib3gYASABKAsyFS5jbGVhbnJvb20udjEuU2FuZGJveBIPCgdjcmVhdGVkGAIgASgIEioKCWJvb3RzdHJhcBgDIAEoCzIXLmNsZWFucm9vbS52MS5Cb290c3RyYXASKgoJZXhlY3V0aW9uGAQgASgLMhcuY2xlYW5yb29tLnYxLkV4ZWN1dGlvbiKnAQoFSW1hZ2USDgoGZGlnZXN0GAEgASgJEhEKCXJlZmVyZW5jZRgCIAEoCRIXCg9tYW5pZmVzdF9kaWdlc3QYAyABKAkSFQoNY29uZmlnX2RpZ2VzdBgEIAEoCRIOCgZsYXllcnMYBSADKAkSDAoEc2l6ZRgGIAEoBBItCglwdWxsZWRfYXQYByABKAsyGi5nb29nbGUucHJvdG9idWYuVGltZXN0YW1wIiUKEFB1bGxJbWFnZVJlcXVlc3QSEQoJaW1hZ2VfcmVmGAEgASgJIjcKEVB1bGxJbWFnZVJlc3BvbnNlEiIKBWltYWdlGAEgASgLMhMuY2xlYW5yb29tLnYxLkltYWdlIigKE1Jlc29sdmVJbWFnZVJlcXVlc3QSEQoJaW1hZ2VfcmVmGAEgASgJIjkKFFJlc29sdmVJbWFnZVJlc3BvbnNlEhEKCXJlZmVyZW5jZRgBIAEoCRIOCgZkaWdlc3QYAiABKAkiEwoRTGlzdEltYWdlc1JlcXVlc3QiOQoSTGlzdEltYWdlc1Jlc3BvbnNlEiMKBmltYWdlcxgBIAMoCzITLmNsZWFucm9vbS52MS5JbWFnZSIkChJSZW1vdmVJbWFnZVJlcXVlc3QSDgoGZGlnZXN0GAEgASgJIjkKE1JlbW92ZUltYWdlUmVzcG9uc2USIgoFaW1hZ2UYASABKAsyEy5jbGVhbnJvb20udjEuSW1hZ2UqnAIKDVNhbmRib3hTdGF0dXMSHgoaU0FOREJPWF9TVEFUVVNfVU5TUEVDSUZJRUQQABIfChtTQU5EQk9YX1NUQVRVU19QUk9WSVNJT05JTkcQARIYChRTQU5EQk9YX1NUQVRVU19SRUFEWRACEhsKF1NBTkRCT1hfU1RBVFVTX1NUT1BQSU5HEAMSGgoWU0FOREJPWF9TVEFUVVNfU1RPUFBFRBAEEhkKFVNBTkRCT1hfU1RBVFVTX0ZBSUxFRBAFEhkKFVNBTkRCT1hfU1RBVFVTX1BBVVNFRBAoEiAKHFNBTkRCT1hfU1RBVFVTX0NIRUNLUE9JTlRJTkcQKRIfChtTQU5EQk9YX1NUQVRVU19DSEVDS1BPSU5URUQQKirqAQoPRXhlY3V0aW9uU3RhdHVzEiAKHEVYRUNVVElPTl9TVEFUVVNfVU5TUEVDSUZJRUQQABIbChdFWEVDVVRJT05fU1RBVFVTX1FVRVVFRBABEhwKGEVYRUNVVElPTl9TVEFUVVNfUlVOTklORxACEh4KGkVYRUNVVElPTl9TVEFUVVNfU1VDQ0VFREVEEAMSGwoXRVhFQ1VUSU9OX1NUQVRVU19GQUlMRUQQBBIdChlFWEVDVVRJT05fU1RBVFVTX0NBTkNFTEVEEAUSHgoaRVhFQ1VUSU9OX1NUQVRVU19USU1FRF9PVVQQBippCg1FeGVjdXRpb25LaW5kEh4KGkVYRUNVVElPTl9LSU5EX1VOU1BFQ0lGSUVEEAASGAoURVhFQ1VUSU9OX0tJTkRfQkFUQ0gQARIeChpFWEVDVVRJT05fS0lORF9JTlRFUkFDVElWRRACKmEKDE91dHB1dFN0cmVhbRIdChlPVVRQVVRfU1RSRUFNX1VOU1BFQ0lGSUVEEAASGAoUT1VUUFVUX1NUUkVBTV9TVERPVVQQARIYChRPVVRQVVRfU1RSRUFNX1NUREVSUhACMsMECg5TYW5kYm94U2VydmljZRJYCg1DcmVhdGVTYW5kYm94EiIuY2xlYW5yb29tLnYxLkNyZWF0ZVNhbmRib3hSZXF1ZXN0GiMuY2xlYW5yb29tLnYxLkNyZWF0ZVNhbmRib3hSZXNwb25zZRJPCgpHZXRTYW5kYm94Eh8uY2xlYW5yb29tLnYxLkdldFNhbmRib3hSZXF1ZXN0GiAuY2xlYW5yb29tLnYxLkdldFNhbmRib3hSZXNwb25zZRJYCg1MaXN0U2FuZGJveGVzEiIuY2xlYW5yb29tLnYxLkxpc3RTYW5kYm94ZXNSZXF1ZXN0GiMuY2xlYW5yb29tLnYxLkxpc3RTYW5kYm94ZXNSZXNwb25zZRJqChNEb3dubG9hZFNhbmRib3hGaWxlEiguY2xlYW5yb29tLnYxLkRvd25sb2FkU2FuZGJveEZpbGVSZXF1ZXN0GikuY2xlYW5yb29tLnYxLkRvd25sb2FkU2FuZGJveEZpbGVSZXNwb25zZRJhChBUZXJtaW5hdGVTYW5kYm94EiUuY2xlYW5yb29tLnYxLlRlcm1pbmF0ZVNhbmRib3hSZXF1ZXN0GiYuY2xlYW5yb29tLnYxLlRlcm1pbmF0ZVNhbmRib3hSZXNwb25zZRJdChNTdHJlYW1TYW5kYm94RXZlbnRzEiguY2xlYW5yb29tLnYxLlN0cmVhbVNhbmRib3hFdmVudHNSZXF1ZXN0GhouY2xlYW5yb29tLnYxLlNhbmRib3hFdmVudDABMvwGChBFeGVjdXRpb25TZXJ2aWNlEl4KD0NyZWF0ZUV4ZWN1dGlvbhIkLmNsZWFucm9vbS52MS5DcmVhdGVFeGVjdXRpb25SZXF1ZXN0GiUuY2xlYW5yb29tLnYxLkNyZWF0ZUV4ZWN1dGlvblJlc3BvbnNlEl4KD0F0dGFjaEV4ZWN1dGlvbhIkLmNsZWFucm9vbS52MS5BdHRhY2hFeGVjdXRpb25SZXF1ZXN0GiUuY2xlYW5yb29tLnYxLkF0dGFjaEV4ZWN1dGlvblJlc3BvbnNlElUKDEdldEV4ZWN1dGlvbhIhLmNsZWFucm9vbS52MS5HZXRFeGVjdXRpb25SZXF1ZXN0GiIuY2xlYW5yb29tLnYxLkdldEV4ZWN1dGlvblJlc3BvbnNlEmEKEEluc3BlY3RFeGVjdXRpb24SJS5jbGVhbnJvb20udjEuSW5zcGVjdEV4ZWN1dGlvblJlcXVlc3QaJi5jbGVhbnJvb20udjEuSW5zcGVjdEV4ZWN1dGlvblJlc3BvbnNlEl4KD0NhbmNlbEV4ZWN1dGlvbhIkLmNsZWFucm9vbS52MS5DYW5jZWxFeGVjdXRpb25SZXF1ZXN0GiUuY2xlYW5yb29tLnYxLkNhbmNlbEV4ZWN1dGlvblJlc3BvbnNlEmoKE1dyaXRlRXhlY3V0aW9uU3RkaW4SKC5jbGVhbnJvb20udjEuV3JpdGVFeGVjdXRpb25TdGRpblJlcXVlc3QaKS5jbGVhbnJvb20udjEuV3JpdGVFeGVjdXRpb25TdGRpblJlc3BvbnNlEmoKE0Nsb3NlRXhlY3V0aW9uU3RkaW4SKC5jbGVhbnJvb20udjEuQ2xvc2VFeGVjdXRpb25TdGRpblJlcXVlc3QaKS5jbGVhbnJvb20udjEuQ2xvc2VFeGVjdXRpb25TdGRpblJlc3BvbnNlEl0KD1N0cmVhbUV4ZWN1dGlvbhIkLmNsZWFucm9vbS52MS5TdHJlYW1FeGVjdXRpb25SZXF1ZXN0GiIuY2xlYW5yb29tLnYxLkV4ZWN1dGlvblN0cmVhbUV2ZW50MAESVwoMUnVuRXhlY3V0aW9uEiEuY2xlYW5yb29tLnYxLlJ1bkV4ZWN1dGlvblJlcXVlc3QaIi5jbGVhbnJvb20udjEuRXhlY3V0aW9uU3RyZWFtRXZlbnQwATLYAgoMSW1hZ2VTZXJ2aWNlEkwKCVB1bGxJbWFnZRIeLmNsZWFucm9vbS52MS5QdWxsSW1hZ2VSZXF1ZXN0Gh8uY2xlYW5yb29tLnYxLlB1bGxJbWFnZVJlc3BvbnNlElUKDFJlc29sdmVJbWFnZRIhLmNsZWFucm9vbS52MS5SZXNvbHZlSW1hZ2VSZXF1ZXN0GiIuY2xlYW5yb29tLnYxLlJlc29sdmVJbWFnZVJlc3BvbnNlEk8KCkxpc3RJbWFnZXMSHy5jbGVhbnJvb20udjEuTGlzdEltYWdlc1JlcXVlc3QaIC5jbGVhbnJvb20udjEuTGlzdEltYWdlc1Jlc3BvbnNlElIKC1JlbW92ZUltYWdlEiAuY2xlYW5yb29tLnYxLlJlbW92ZUltYWdlUmVxdWVzdBohLmNsZWFucm9vbS52MS5SZW1vdmVJbWFnZVJlc3BvbnNlYgZwcm90bzM", [file_google_protobuf_struct, file_google_protobuf_timestamp, file_cleanroom_v1_usage]);
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
