//! Reads the XWD screen dump that `Xvfb -fbdir` keeps and writes it as a PNG, so the test can
//! keep a picture of the real window without ImageMagick. Only what Xvfb writes is supported:
//! a ZPixmap of 24 or 32 bits per pixel with colour masks.

use std::path::Path;

/// An RGB image, row by row.
pub struct Screen {
    pub width: usize,
    pub height: usize,
    pub rgb: Vec<u8>,
}

impl Screen {
    pub fn read_xwd(path: &Path) -> Result<Screen, String> {
        let data = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        // The header is 25 big-endian CARD32s, then the window name, then the colour map.
        let field = |i: usize| -> Result<u32, String> {
            let bytes = data
                .get(i * 4..i * 4 + 4)
                .ok_or("XWD header is cut short")?;
            Ok(u32::from_be_bytes(
                bytes.try_into().map_err(|_| "bad header")?,
            ))
        };
        let header_size = field(0)? as usize;
        let (format, width, height) = (field(2)?, field(4)? as usize, field(5)? as usize);
        let (lsb_first, bits_per_pixel, bytes_per_line) =
            (field(7)? == 0, field(11)? as usize, field(12)? as usize);
        let (red_mask, green_mask, blue_mask, ncolors) =
            (field(14)?, field(15)?, field(16)?, field(19)? as usize);
        if format != 2 || !(bits_per_pixel == 24 || bits_per_pixel == 32) {
            return Err(format!(
                "unsupported XWD: format {format}, {bits_per_pixel} bits per pixel"
            ));
        }
        let pixels = data
            .get(header_size + ncolors * 12..)
            .ok_or("XWD pixel data missing")?;
        if pixels.len() < bytes_per_line * height {
            return Err("XWD pixel data is cut short".into());
        }
        let channel = |pixel: u32, mask: u32| -> u8 {
            if mask == 0 {
                return 0;
            }
            let value = (pixel & mask) >> mask.trailing_zeros();
            let max = mask >> mask.trailing_zeros();
            (value * 255 / max) as u8
        };
        let step = bits_per_pixel / 8;
        let mut rgb = Vec::with_capacity(width * height * 3);
        for y in 0..height {
            let row = &pixels[y * bytes_per_line..];
            for x in 0..width {
                let bytes = &row[x * step..x * step + step];
                let pixel = bytes.iter().enumerate().fold(0u32, |acc, (i, &b)| {
                    let shift = if lsb_first { 8 * i } else { 8 * (step - 1 - i) };
                    acc | (u32::from(b) << shift)
                });
                rgb.extend([
                    channel(pixel, red_mask),
                    channel(pixel, green_mask),
                    channel(pixel, blue_mask),
                ]);
            }
        }
        Ok(Screen { width, height, rgb })
    }

    /// The top right corner of the screen, `width` × `height`: where the app puts its window
    /// on Linux, near the panels' indicators (there is no window manager to move it).
    pub fn crop(&self, width: usize, height: usize) -> Screen {
        let (width, height) = (width.min(self.width), height.min(self.height));
        let left = self.width - width;
        let mut rgb = Vec::with_capacity(width * height * 3);
        for y in 0..height {
            let start = (y * self.width + left) * 3;
            rgb.extend_from_slice(&self.rgb[start..start + width * 3]);
        }
        Screen { width, height, rgb }
    }

    /// Whether more than `n` colours show, stopping at the first one past `n` (cheap enough
    /// to poll a screen with).
    pub fn more_colours_than(&self, n: usize) -> bool {
        let mut seen: Vec<[u8; 3]> = Vec::with_capacity(n + 1);
        for c in self.rgb.chunks_exact(3) {
            let c = [c[0], c[1], c[2]];
            if !seen.contains(&c) {
                seen.push(c);
                if seen.len() > n {
                    return true;
                }
            }
        }
        false
    }

    pub fn distinct_colours(&self) -> usize {
        let mut seen: Vec<[u8; 3]> = self
            .rgb
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }

    /// A PNG with stored (uncompressed) deflate blocks: valid everywhere, no compressor needed,
    /// and the file is a test artefact, not something to keep small.
    pub fn to_png(&self) -> Vec<u8> {
        let mut raw = Vec::with_capacity((self.width * 3 + 1) * self.height);
        for row in self.rgb.chunks_exact(self.width * 3) {
            raw.push(0);
            raw.extend_from_slice(row);
        }
        let mut zlib = vec![0x78, 0x01];
        let mut blocks = raw.chunks(65_535).peekable();
        while let Some(block) = blocks.next() {
            zlib.push(u8::from(blocks.peek().is_none()));
            let len = block.len() as u16;
            zlib.extend(len.to_le_bytes());
            zlib.extend((!len).to_le_bytes());
            zlib.extend_from_slice(block);
        }
        zlib.extend(adler32(&raw).to_be_bytes());

        let mut ihdr = Vec::new();
        ihdr.extend((self.width as u32).to_be_bytes());
        ihdr.extend((self.height as u32).to_be_bytes());
        ihdr.extend([8, 2, 0, 0, 0]); // 8-bit RGB
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        for (kind, body) in [(b"IHDR", ihdr), (b"IDAT", zlib), (b"IEND", Vec::new())] {
            png.extend((body.len() as u32).to_be_bytes());
            let start = png.len();
            png.extend_from_slice(kind);
            png.extend_from_slice(&body);
            let crc = crc32(&png[start..]);
            png.extend(crc.to_be_bytes());
        }
        png
    }
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    (b << 16) | a
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn png_checksums_match_known_values() {
    assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
}
