//! Trial decompressions of a response body from a secret-bound host: the body is fed to
//! every decompressor it might be meant for (gzip, zlib and zstd when their magic starts
//! it, raw deflate and brotli — formats without magic — always), whatever Content-Encoding
//! says, and each one's output is searched for the secret values. A magic-less trial that
//! fails is simply not what the body is; a body that starts with gzip or zstd magic and
//! then does not decode (or needs a window over 16 MiB) is refused: it claims to be
//! compressed and cannot be searched.

use crate::secrets::Redactor;
use std::io::Write;

/// Input fed to a trial decoder at once: bounds what one step can expand to.
const TRIAL_STEP: usize = 256;
/// Largest zstd window accepted (bounds the memory one response can make the gateway use;
/// brotli's largest standard window is the same).
const ZSTD_WINDOW_LOG: u32 = 24;
/// Output buffer of the brotli trial.
const BROTLI_BUFFER: usize = 4096;
/// Most bytes one trial decompression may produce; beyond that the body is refused (a
/// decompression bomb cannot be searched in bounded time).
const TRIAL_MAX_OUT: u64 = 64 << 20;
/// One decompression of the body being tried, and the search through its output.
pub(crate) enum Decoder {
    Gzip(flate2::write::MultiGzDecoder<Vec<u8>>),
    Zlib(flate2::write::ZlibDecoder<Vec<u8>>),
    Deflate(flate2::write::DeflateDecoder<Vec<u8>>),
    Zstd(zstd::stream::write::Decoder<'static, Vec<u8>>),
    Brotli(Box<brotli_decompressor::DecompressorWriter<Vec<u8>>>),
    /// A format the body claims that could not be set up: every feed fails.
    Unavailable,
}

impl Decoder {
    fn feed(&mut self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        let out = match self {
            Decoder::Gzip(d) => {
                d.write_all(data)?;
                d.flush()?;
                d.get_mut()
            }
            Decoder::Zlib(d) => {
                d.write_all(data)?;
                d.flush()?;
                d.get_mut()
            }
            Decoder::Deflate(d) => {
                d.write_all(data)?;
                d.flush()?;
                d.get_mut()
            }
            Decoder::Zstd(d) => {
                d.write_all(data)?;
                d.flush()?;
                d.get_mut()
            }
            Decoder::Brotli(d) => {
                d.write_all(data)?;
                d.flush()?;
                d.get_mut()
            }
            Decoder::Unavailable => return Err(std::io::ErrorKind::Unsupported.into()),
        };
        Ok(std::mem::take(out))
    }
}

struct Trial {
    decoder: Decoder,
    /// The body's magic says it is this format: failing to decode is a refusal.
    claimed: bool,
    search: Redactor,
    produced: u64,
}

/// The decompressions still being tried. One that fails is not what the body is.
pub(crate) struct Trials(Vec<Trial>);

/// What the trial decompressions found in a chunk.
pub(crate) enum Verdict {
    Clean,
    /// A decompressed view ends in the start of a value: pass nothing on yet, or the
    /// sandbox could decode that start from a body cut off later.
    Hold,
    /// A value (or an encoding of it) in a decompressed view, or a bomb.
    Refuse(String),
}

impl Trials {
    pub(crate) fn start(prefix: &[u8], redactor: &Redactor) -> Trials {
        let mut decoders = vec![
            (
                Decoder::Deflate(flate2::write::DeflateDecoder::new(Vec::new())),
                false,
            ),
            (
                Decoder::Brotli(Box::new(brotli_decompressor::DecompressorWriter::new(
                    Vec::new(),
                    BROTLI_BUFFER,
                ))),
                false,
            ),
        ];
        if prefix.starts_with(&[0x1f, 0x8b]) {
            decoders.push((
                Decoder::Gzip(flate2::write::MultiGzDecoder::new(Vec::new())),
                true,
            ));
        }
        if let [cmf, flg, ..] = *prefix {
            if cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
            {
                // Two bytes of checksum are weak evidence ("80" passes): not a claim.
                decoders.push((
                    Decoder::Zlib(flate2::write::ZlibDecoder::new(Vec::new())),
                    false,
                ));
            }
        }
        if prefix.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            let zstd = zstd::stream::write::Decoder::new(Vec::new()).and_then(|mut d| {
                d.window_log_max(ZSTD_WINDOW_LOG)?;
                Ok(d)
            });
            // No decoder for a body that claims zstd means it cannot be searched.
            let zstd = zstd.map_or(Decoder::Unavailable, Decoder::Zstd);
            decoders.push((zstd, true));
        }
        Trials(
            decoders
                .into_iter()
                .map(|(decoder, claimed)| Trial {
                    decoder,
                    claimed,
                    search: redactor.clone(),
                    produced: 0,
                })
                .collect(),
        )
    }

    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Verdict {
        let mut verdict = Verdict::Clean;
        self.0.retain_mut(|t| {
            for step in chunk.chunks(TRIAL_STEP) {
                let Ok(out) = t.decoder.feed(step) else {
                    if t.claimed {
                        verdict = Verdict::Refuse(
                            "the body starts like compressed data but does not decode".into(),
                        );
                    }
                    return false;
                };
                t.produced += out.len() as u64;
                if t.produced > TRIAL_MAX_OUT {
                    verdict = Verdict::Refuse(
                        "the body decompresses to more than the gateway searches".into(),
                    );
                    return false;
                }
                if t.search.found_in_next(&out) {
                    verdict = Verdict::Refuse(
                        "the body carries a secret value in compressed form".into(),
                    );
                    return false;
                }
            }
            true
        });
        if matches!(verdict, Verdict::Clean) && self.0.iter().any(|t| t.search.ends_in_partial()) {
            verdict = Verdict::Hold;
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUE: &[u8] = b"sk+live/0123?456789~abc";

    fn redactor() -> Redactor {
        crate::secrets::test_redactor(VALUE)
    }

    fn compressed(kind: &str, data: &[u8]) -> Vec<u8> {
        use flate2::Compression;
        match kind {
            "gzip" => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            "zlib" => {
                let mut e = flate2::write::ZlibEncoder::new(Vec::new(), Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            "deflate" => {
                let mut e = flate2::write::DeflateEncoder::new(Vec::new(), Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            "zstd" => zstd::encode_all(data, 3).unwrap(),
            "brotli" => {
                let mut out = Vec::new();
                let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                e.write_all(data).unwrap();
                drop(e);
                out
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn compressed_values_are_found_without_a_content_encoding() {
        let mut text = b"{\"echo\": \"".to_vec();
        text.extend_from_slice(VALUE);
        text.extend_from_slice(b"\"}");
        for kind in ["gzip", "zlib", "deflate", "zstd", "brotli"] {
            let body = compressed(kind, &text);
            // Fed in small chunks, as a network would.
            let mut trials = Trials::start(&body, &redactor());
            let refused = body
                .chunks(5)
                .any(|c| matches!(trials.feed(c), Verdict::Refuse(_)));
            assert!(refused, "{kind}");
            // The same stream without the value passes.
            let clean = compressed(kind, b"{\"echo\": \"nothing to see\"}");
            let mut trials = Trials::start(&clean, &redactor());
            assert!(clean
                .chunks(5)
                .all(|c| !matches!(trials.feed(c), Verdict::Refuse(_))));
        }
        // Plain text is not mistaken for anything.
        let mut trials = Trials::start(b"{\"a\": 1}", &redactor());
        assert!(matches!(trials.feed(b"{\"a\": 1}"), Verdict::Clean));
    }

    #[test]
    fn nothing_of_a_compressed_value_is_passed_on_before_the_refusal() {
        // Text without the value's first letter, then the value.
        let mut seed = 7u64;
        let mut text: Vec<u8> = (0..20_000)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                b"abcdefghijklmnopqr"[(seed >> 40) as usize % 18]
            })
            .collect();
        text.extend_from_slice(VALUE);
        text.extend_from_slice(b"abcabc");
        for kind in ["gzip", "deflate", "zstd", "brotli"] {
            let body = compressed(kind, &text);
            for size in [1, 7, 100, 4096] {
                let mut trials = Trials::start(&body, &redactor());
                let (mut sent, mut held) = (Vec::new(), Vec::new());
                let mut refused = false;
                for c in body.chunks(size) {
                    held.extend_from_slice(c);
                    match trials.feed(c) {
                        Verdict::Clean => sent.append(&mut held),
                        Verdict::Hold => {}
                        Verdict::Refuse(_) => {
                            refused = true;
                            break;
                        }
                    }
                }
                assert!(refused, "{kind}/{size}");
                // What the sandbox could decode from what was passed on.
                let mut out = Vec::new();
                let _ = std::io::Read::read_to_end(
                    &mut flate2::read::MultiGzDecoder::new(&sent[..]),
                    &mut out,
                );
                let mut raw = Vec::new();
                let _ = std::io::Read::read_to_end(
                    &mut flate2::read::DeflateDecoder::new(&sent[..]),
                    &mut raw,
                );
                let mut z = Vec::new();
                if let Ok(mut d) = zstd::stream::read::Decoder::new(&sent[..]) {
                    let _ = std::io::Read::read_to_end(&mut d, &mut z);
                }
                for decoded in [out, raw, z] {
                    assert!(!decoded.contains(&VALUE[0]), "{kind}/{size}");
                }
            }
        }
    }

    #[test]
    fn a_body_claiming_gzip_or_zstd_that_does_not_decode_is_refused() {
        for body in [
            &[
                0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff,
            ][..],
            // A reserved header bit set.
            &[0x28, 0xb5, 0x2f, 0xfd, 0x08, 0x50, 1, 0, 0, 0][..],
            // A 1 GiB window (over the 16 MiB the gateway allows).
            &[0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa0, 1, 0, 0, 0][..],
        ] {
            let mut trials = Trials::start(body, &redactor());
            assert!(matches!(trials.feed(body), Verdict::Refuse(_)), "{body:?}");
        }
        // "80..." passes the zlib checksum but is not a claim.
        let mut trials = Trials::start(b"80 items", &redactor());
        assert!(!matches!(trials.feed(b"80 items"), Verdict::Refuse(_)));
    }
}
