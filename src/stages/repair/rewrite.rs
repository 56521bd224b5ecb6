//! The last step of every repair: the input wheel written out again under its new
//! platform tags, with some members replaced and some added.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::formats::wheel::{Contents, PlatformTag, WheelArchive, WriteOptions, write_wheel};
use crate::stages::repair::sbom::{Vendored, sbom_entry};

/// Writes `wheel` into `out_dir` retagged with `platform_tags`: members named in
/// `replaced` get those bytes, `added` members join them, the WHEEL file carries the
/// new tags, RECORD is rebuilt by the writer, and every other member is copied raw
/// (neither recompressed nor rehashed). When something was `vendored`, an SBOM describing
/// it joins them. Returns the new wheel's path.
pub fn rewrite_wheel<'a>(
    wheel: &'a WheelArchive,
    platform_tags: Vec<PlatformTag>,
    mut replaced: BTreeMap<String, Vec<u8>>,
    added: Vec<(String, Contents<'a>)>,
    vendored: &Vendored,
    out_dir: &Path,
    epoch: Option<u64>,
) -> Result<PathBuf> {
    let new_name = wheel.name().with_platforms(platform_tags);
    let dist_info = wheel.dist_info_dir().to_string();
    let wheel_file = format!("{dist_info}/WHEEL");
    let record_file = format!("{dist_info}/RECORD");
    let mut metadata = wheel.wheel_metadata().clone();
    metadata.replace_tags(&new_name.tags());
    let mut entries = added;
    for entry in wheel.entries() {
        if entry.name == record_file {
            continue;
        }
        let contents = if entry.name == wheel_file {
            let text = metadata.to_string();
            if text.as_bytes() == wheel.read(&entry.name)?.as_slice() {
                Contents::Raw(wheel.raw_entry(&entry.name)?)
            } else {
                Contents::Bytes {
                    data: text.into_bytes(),
                    mode: entry.unix_mode.unwrap_or(0o644),
                }
            }
        } else if let Some(bytes) = replaced.remove(&entry.name) {
            Contents::Bytes {
                data: bytes,
                mode: entry.unix_mode.unwrap_or(0o755),
            }
        } else {
            Contents::Raw(wheel.raw_entry(&entry.name)?)
        };
        entries.push((entry.name.clone(), contents));
    }
    if let Some(sbom) = sbom_entry(wheel, vendored, &entries, epoch)? {
        entries.push(sbom);
    }
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    write_wheel(out_dir, &new_name, entries, &WriteOptions { epoch })
        .with_context(|| format!("writing the repaired {}", new_name.file_name()))
}
