//! Room for dynamic sections that outgrow their slot.
//!
//! `Builder::write` keeps every allocated section at its input file offset. A
//! section that grows past the next one (or past the end of its `PT_LOAD`) is
//! moved, like patchelf does, to a new `PT_LOAD` appended after all others. The
//! extra program header grows the header table, so the sections right behind it
//! move too. Segments that describe a moved section (`PT_NOTE`, `PT_DYNAMIC`,
//! `PT_INTERP`, `PT_GNU_PROPERTY`) follow it. Sections are only moved when nothing
//! but those segments and the builder-generated dynamic entries refer to them.

use object::build::elf::{Builder, Section, SectionData, SectionId, SegmentId};
use object::elf;
use object::write::elf as encode;

use super::edit::ElfEditError;

/// Segment types whose range is recomputed from the sections they describe.
const FOLLOWING_SEGMENTS: [elf::ProgramType; 4] = [
    elf::PT_NOTE,
    elf::PT_DYNAMIC,
    elf::PT_INTERP,
    elf::PT_GNU_PROPERTY,
];

/// Moves the sections that no longer fit to a new `PT_LOAD`, if there are any.
pub(super) fn make_room(builder: &mut Builder<'_>) -> Result<(), ElfEditError> {
    normalize_alignments(builder)?;
    // `write` drops unused version entries; the planned sizes must match its output.
    builder.delete_unused_versions();
    let plans = plan_sizes(builder);

    let mut moving: Vec<SectionId> = plans
        .iter()
        .filter(|plan| plan.new_size > plan.old_size && !plan.fits())
        .map(|plan| plan.id)
        .collect();
    if moving.is_empty() {
        return Ok(());
    }

    let header_size = builder.encoder().program_header_size();
    let table_end = (builder.segments.count() as u64 + 1)
        .checked_mul(header_size)
        .and_then(|size| size.checked_add(builder.header.e_phoff))
        .ok_or_else(|| ElfEditError::Parse("program header table offset overflows".into()))?;
    ensure_table_is_loaded(builder, table_end)?;
    for plan in &plans {
        if plan.offset < table_end && !moving.contains(&plan.id) {
            moving.push(plan.id);
        }
    }
    add_segment_companions(builder, &mut moving);
    for &id in &moving {
        let section = builder.sections.get(id);
        if !is_movable(section) {
            return Err(ElfEditError::NoRoom(format!(
                "section `{}` (type 0x{:x}) would have to move and cannot, because code or data may refer to its address",
                section.name, section.sh_type.0
            )));
        }
    }

    let mut flags = elf::PF_R;
    if moving
        .iter()
        .any(|&id| builder.sections.get(id).sh_flags.contains(elf::SHF_WRITE))
    {
        flags |= elf::PF_W;
    }
    let new_load = add_last_load_segment(builder, flags)?;

    moving.sort_by_key(|&id| builder.sections.get(id).sh_offset);
    for &id in &moving {
        let new_size = plans
            .iter()
            .find(|plan| plan.id == id)
            .map_or(builder.sections.get(id).sh_size, |plan| plan.new_size);
        let required_align = write_alignment(builder, builder.sections.get(id));
        let section = builder.sections.get_mut(id);
        section.sh_size = new_size;
        section.sh_addralign = section.sh_addralign.max(required_align);
        let old_addr = section.sh_addr;
        builder.segments.get_mut(new_load).append_section(section);
        let delta = section.sh_addr.wrapping_sub(old_addr);
        relocate_symbols(builder, id, delta);
    }

    for segment in builder.segments.iter_mut() {
        if segment.id() == new_load {
            continue;
        }
        if FOLLOWING_SEGMENTS.contains(&segment.p_type) {
            if segment.sections.iter().any(|id| moving.contains(id)) {
                segment.recalculate_ranges(&builder.sections);
            }
        } else {
            segment.sections.retain(|id| !moving.contains(id));
        }
        if segment.p_type == elf::PT_PHDR {
            segment.p_filesz = segment.p_filesz.saturating_add(header_size);
            segment.p_memsz = segment.p_memsz.saturating_add(header_size);
        }
    }
    Ok(())
}

/// Adds an empty `PT_LOAD` after the file contents and the address range of all
/// others, its address congruent to its offset modulo the largest load alignment.
///
/// Unlike `Segments::add_load_segment`, only `PT_LOAD`s are considered: other
/// segments may carry unrelated sizes (`PT_GNU_STACK`'s p_memsz is a stack size).
fn add_last_load_segment(
    builder: &mut Builder<'_>,
    flags: elf::ProgramFlags,
) -> Result<SegmentId, ElfEditError> {
    let overflow = || ElfEditError::Parse("PT_LOAD range overflows".into());
    let mut file_end = 0u64;
    let mut memory_end = 0u64;
    let mut align = 1u64;
    for load in builder.segments.iter().filter(|segment| segment.is_load()) {
        file_end = file_end.max(
            load.p_offset
                .checked_add(load.p_filesz)
                .ok_or_else(overflow)?,
        );
        memory_end = memory_end.max(
            load.p_vaddr
                .checked_add(load.p_memsz)
                .ok_or_else(overflow)?,
        );
        align = align.max(load.p_align);
    }
    if !align.is_power_of_two() {
        return Err(ElfEditError::Parse(format!(
            "PT_LOAD alignment 0x{align:x} is not a power of two"
        )));
    }
    let address = memory_end
        .checked_next_multiple_of(align)
        .and_then(|start| start.checked_add(file_end % align))
        .ok_or_else(overflow)?;
    let segment = builder.segments.add();
    segment.p_type = elf::PT_LOAD;
    segment.p_flags = flags;
    segment.p_offset = file_end;
    segment.p_vaddr = address;
    segment.p_paddr = address;
    segment.p_align = align;
    Ok(segment.id())
}

/// Where an allocated section is, how big it is, and how big it will be written.
#[derive(Debug)]
struct SizePlan {
    id: SectionId,
    offset: u64,
    old_size: u64,
    new_size: u64,
    /// End of the room the section may use in place: the next section or the end
    /// of the file part of its `PT_LOAD`.
    slot_end: u64,
}

impl SizePlan {
    fn fits(&self) -> bool {
        self.offset
            .checked_add(self.new_size)
            .is_some_and(|end| end <= self.slot_end)
    }
}

fn plan_sizes(builder: &Builder<'_>) -> Vec<SizePlan> {
    let dynstr_size = builder.dynamic_string_size();
    let gnu_hash_size = gnu_hash_size(builder);
    let mut plans: Vec<SizePlan> = builder
        .sections
        .iter()
        .filter(|section| section.is_alloc() && section.sh_type != elf::SHT_NOBITS)
        .map(|section| SizePlan {
            id: section.id(),
            offset: section.sh_offset,
            old_size: section.sh_size,
            new_size: match section.data {
                SectionData::DynamicString => dynstr_size,
                SectionData::GnuHash => gnu_hash_size,
                _ => builder.section_size(section),
            },
            slot_end: u64::MAX,
        })
        .collect();
    plans.sort_by_key(|plan| (plan.offset, plan.old_size));

    let next_offsets: Vec<u64> = plans
        .iter()
        .skip(1)
        .map(|plan| plan.offset)
        .chain([u64::MAX])
        .collect();
    for (plan, next_offset) in plans.iter_mut().zip(next_offsets) {
        let load_end = builder
            .segments
            .iter()
            .filter(|segment| segment.is_load())
            .find(|segment| segment.contains_offset(plan.offset))
            .and_then(|segment| segment.p_offset.checked_add(segment.p_filesz))
            .unwrap_or_else(|| plan.offset.saturating_add(plan.old_size));
        plan.slot_end = next_offset.min(load_end);
    }
    plans
}

/// The size `write` gives `.gnu.hash`: it hashes the named, defined, non-local
/// dynamic symbols. (`Builder::gnu_hash_size` counts every defined symbol and so
/// over-counts by 4 bytes per local one.)
fn gnu_hash_size(builder: &Builder<'_>) -> u64 {
    let hashed = builder
        .dynamic_symbols
        .iter()
        .filter(|symbol| {
            symbol.st_bind() != elf::STB_LOCAL
                && !symbol.name.is_empty()
                && (symbol.section.is_some() || symbol.st_shndx != elf::SHN_UNDEF)
        })
        .count();
    builder.encoder().gnu_hash_size(
        builder.gnu_hash_bloom_count,
        builder.gnu_hash_bucket_count,
        u32::try_from(hashed).unwrap_or(u32::MAX),
    )
}

/// `write` and `append_section` both compute `(offset + align - 1) & !(align - 1)`:
/// an alignment of 0 or one that is not a power of two would corrupt the layout.
fn normalize_alignments(builder: &mut Builder<'_>) -> Result<(), ElfEditError> {
    for section in builder.sections.iter_mut() {
        if section.sh_addralign == 0 {
            section.sh_addralign = 1;
        } else if !section.sh_addralign.is_power_of_two() {
            return Err(ElfEditError::Parse(format!(
                "section `{}` has alignment {}, which is not a power of two",
                section.name, section.sh_addralign
            )));
        }
    }
    Ok(())
}

/// The grown program header table must stay inside the `PT_LOAD` that maps it.
fn ensure_table_is_loaded(builder: &Builder<'_>, table_end: u64) -> Result<(), ElfEditError> {
    let e_phoff = builder.header.e_phoff;
    let Some(load) = builder
        .segments
        .iter()
        .find(|segment| segment.is_load() && segment.contains_offset(e_phoff))
    else {
        return Ok(());
    };
    if load.p_offset.saturating_add(load.p_filesz) < table_end {
        return Err(ElfEditError::NoRoom(format!(
            "the first PT_LOAD ends at file offset 0x{:x}, before the grown program header table (0x{table_end:x})",
            load.p_offset.saturating_add(load.p_filesz)
        )));
    }
    Ok(())
}

/// A segment that describes a moving section must describe only moving sections,
/// or its range could not be recomputed.
fn add_segment_companions(builder: &Builder<'_>, moving: &mut Vec<SectionId>) {
    loop {
        let mut added = false;
        for segment in builder.segments.iter() {
            if !FOLLOWING_SEGMENTS.contains(&segment.p_type)
                || !segment.sections.iter().any(|id| moving.contains(id))
            {
                continue;
            }
            for id in &segment.sections {
                if !moving.contains(id) {
                    moving.push(*id);
                    added = true;
                }
            }
        }
        if !added {
            return;
        }
    }
}

/// Sections found only through program headers or through dynamic entries that
/// `write` regenerates from the new address.
fn is_movable(section: &Section<'_>) -> bool {
    match &section.data {
        SectionData::Dynamic(_)
        | SectionData::DynamicString
        | SectionData::DynamicSymbol
        | SectionData::Hash
        | SectionData::GnuHash
        | SectionData::GnuVersym
        | SectionData::GnuVerdef
        | SectionData::GnuVerneed
        | SectionData::Note(_) => true,
        SectionData::Data(_) => section.name.as_slice() == b".interp",
        _ => false,
    }
}

/// The alignment `write` checks each generated section's offset against.
fn write_alignment(builder: &Builder<'_>, section: &Section<'_>) -> u64 {
    let address_size = if builder.is_64 { 8 } else { 4 };
    match section.data {
        SectionData::Dynamic(_)
        | SectionData::DynamicSymbol
        | SectionData::GnuHash
        | SectionData::DynamicRelocation(_) => address_size,
        SectionData::Hash => encode::ALIGN_HASH,
        SectionData::GnuVersym => encode::ALIGN_GNU_VERSYM,
        SectionData::GnuVerdef => encode::ALIGN_GNU_VERDEF,
        SectionData::GnuVerneed => encode::ALIGN_GNU_VERNEED,
        _ => 1,
    }
}

/// Symbols defined in a moved section (such as `_DYNAMIC`) move with it.
fn relocate_symbols(builder: &mut Builder<'_>, id: SectionId, delta: u64) {
    for symbol in builder.symbols.iter_mut() {
        if symbol.section == Some(id) {
            symbol.st_value = symbol.st_value.wrapping_add(delta);
        }
    }
    for symbol in builder.dynamic_symbols.iter_mut() {
        if symbol.section == Some(id) {
            symbol.st_value = symbol.st_value.wrapping_add(delta);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::Endianness;

    #[test]
    fn gnu_hash_counts_only_named_defined_global_symbols() {
        let mut builder = Builder::new(Endianness::Little, true);
        builder.gnu_hash_bloom_count = 1;
        builder.gnu_hash_bucket_count = 2;
        let text = builder.sections.add().id();
        let mut add = |name: &'static str, bind: elf::SymbolBind, defined: bool| {
            let symbol = builder.dynamic_symbols.add();
            symbol.name = name.into();
            symbol.set_st_info(bind, elf::STT_FUNC);
            symbol.section = defined.then_some(text);
        };
        add("exported", elf::STB_GLOBAL, true);
        add("weak_exported", elf::STB_WEAK, true);
        add("local", elf::STB_LOCAL, true);
        add("imported", elf::STB_GLOBAL, false);
        add("", elf::STB_GLOBAL, true);

        // Header (16) + one 64-bit bloom word + two buckets + two hashed symbols.
        assert_eq!(gnu_hash_size(&builder), 16 + 8 + 2 * 4 + 2 * 4);
    }

    #[test]
    fn a_section_fits_up_to_its_slot_end() {
        let plan = |new_size| SizePlan {
            id: Builder::new(Endianness::Little, true).sections.add().id(),
            offset: 0x100,
            old_size: 0x10,
            new_size,
            slot_end: 0x120,
        };
        assert!(plan(0x20).fits());
        assert!(!plan(0x21).fits());
        assert!(!plan(u64::MAX).fits());
    }
}
