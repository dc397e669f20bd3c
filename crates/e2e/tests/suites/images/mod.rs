//! OCI images: pull and run (`pull`), tags pinned to digests (`tags`), image paths that
//! cannot steer the setup onto the host (`paths`).

mod paths;
mod pull;
mod tags;
