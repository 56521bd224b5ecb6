//! The repair stage: make a wheel self-contained and honestly tagged for its
//! platform. `linux` is the auditwheel equivalent, `macos` the delocate one;
//! [`WheelPlatform::of`] picks between them from the wheel's own tags.

pub mod linux;
pub mod macos;
mod rewrite;

pub(crate) use rewrite::rewrite_wheel;

use crate::wheel::WheelArchive;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WheelPlatform {
    Linux,
    Macos,
}

impl WheelPlatform {
    /// `None` for pure wheels and platforms crosswheel does not repair.
    pub fn of(wheel: &WheelArchive) -> Option<WheelPlatform> {
        let platforms = &wheel.name().platform;
        if platforms.iter().all(|p| p.starts_with("macosx_")) {
            Some(WheelPlatform::Macos)
        } else if platforms
            .iter()
            .all(|p| p.starts_with("linux_") || p.starts_with("manylinux"))
        {
            Some(WheelPlatform::Linux)
        } else {
            None
        }
    }
}
