//! Checks a database's write-ahead log before SQLite reads it, so that damage is refused
//! instead of silently replayed around.
//!
//! SQLite replays a WAL up to the first frame whose salts or cumulative checksum do not
//! verify, and ignores the rest without a word: one flipped byte early in the log drops every
//! transaction committed after it, acknowledged or not. It also forgets a log whose header
//! does not verify. This module reads the log the way SQLite does (a 32-byte header, then
//! frames of a 24-byte frame header and a page; checksums are SQLite's running sums of 32-bit
//! word pairs, in the byte order the magic names) and then looks *past* the point where SQLite
//! would stop: a later frame that carries the header's salts, verifies against its predecessor
//! and marks a commit is a transaction SQLite would drop. Frames after the last commit that
//! no commit follows are the normal torn tail of a write that was never acknowledged (a
//! kill -9 mid-write); they are reported, not refused. The `-shm` index, when it belongs to
//! the same log, says how many frames SQLite itself last knew as committed; a log that ends
//! before them was cut short.
//!
//! For a damaged log it also folds the frames into two page images of the database, as SQLite
//! would keep it and as it was committed ([`images`]), so recovery can name the tasks whose
//! committed writes the damage loses.
//!
//! Written by hand: no maintained crate verifies a WAL and looks beyond its valid prefix;
//! the format is small and fixed (<https://www.sqlite.org/walformat.html>). The tests build
//! their logs with real SQLite.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

pub const HEADER_LEN: usize = 32;
pub const FRAME_HEADER_LEN: usize = 24;
const MAGIC_LE: u32 = 0x377f_0682;
const MAGIC_BE: u32 = 0x377f_0683;
const VERSION: u32 = 3_007_000;
/// The largest database image [`images`] builds, in bytes.
const MAX_IMAGE: usize = 1 << 32;

/// `<db>-wal`.
pub fn wal_path(db: &Path) -> PathBuf {
    suffixed(db, "-wal")
}

/// `<db>-shm`.
pub fn shm_path(db: &Path) -> PathBuf {
    suffixed(db, "-shm")
}

fn suffixed(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(suffix);
    db.with_file_name(name)
}

/// Why SQLite would ignore the whole log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderFault {
    /// Not SQLite's WAL magic number.
    Magic(u32),
    /// A format version SQLite does not read.
    Version(u32),
    /// Not a power of two from 512 to 65536.
    PageSize(u32),
    /// The header's own checksum does not verify.
    Checksum,
}

impl std::fmt::Display for HeaderFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderFault::Magic(m) => write!(f, "its header has no WAL magic number ({m:#010x})"),
            HeaderFault::Version(v) => write!(f, "its header names format version {v}"),
            HeaderFault::PageSize(p) => write!(f, "its header names page size {p}"),
            HeaderFault::Checksum => write!(f, "its header fails its checksum"),
        }
    }
}

/// What a log holds, as SQLite would replay it and beyond.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalCheck {
    /// The log's length in bytes.
    pub bytes: u64,
    /// Whole frames in the file (valid or not).
    pub frames: u64,
    /// Bytes after the last whole frame.
    pub trailing_bytes: u64,
    pub page_size: Option<u32>,
    /// Set when SQLite would ignore the whole log.
    pub header_fault: Option<HeaderFault>,
    /// Frames SQLite replays: the verified prefix up to its last commit frame.
    pub replayed_frames: u64,
    /// Commits in the replayed frames.
    pub replayed_transactions: u64,
    /// Verified frames after the last replayed commit: a write that never committed.
    pub unfinished_frames: u64,
    /// The first frame (from 1) that does not verify, when frames follow the verified prefix.
    pub first_bad_frame: Option<u64>,
    /// Commit frames after the first bad frame that carry the log's salts and verify against
    /// their predecessor: committed transactions SQLite would drop.
    pub dropped_transactions: u64,
    /// The `-shm` index says SQLite had this many frames committed (when it belongs to this
    /// log).
    pub index_committed_frames: Option<u64>,
}

impl WalCheck {
    /// Committed frames the `-shm` index knew that the log no longer verifies: it was cut
    /// short or damaged there.
    pub fn missing_committed_frames(&self) -> u64 {
        self.index_committed_frames
            .map_or(0, |n| n.saturating_sub(self.replayed_frames))
    }

    /// Whether opening the database would drop committed work (or cannot be shown not to).
    pub fn is_damaged(&self) -> bool {
        self.dropped_transactions > 0
            || self.missing_committed_frames() > 0
            // A header is one small write, synced before any frame: after a crash it is whole.
            // A broken one with frames behind it hides whatever they hold.
            || (self.header_fault.is_some() && self.bytes > HEADER_LEN as u64)
    }

    /// One sentence on what is wrong (empty when nothing is).
    pub fn damage(&self) -> String {
        if !self.is_damaged() {
            return String::new();
        }
        let whole = match (&self.header_fault, self.first_bad_frame) {
            (Some(fault), _) => format!(
                "{fault}, so SQLite would ignore all {} frame(s) in it",
                self.frames
            ),
            (None, Some(bad)) if self.dropped_transactions > 0 => {
                format!("frame {bad} of {} does not verify", self.frames)
            }
            (None, _) => format!(
                "it verifies to frame {} only, but its -shm index knew {} committed frame(s)",
                self.replayed_frames,
                self.index_committed_frames.unwrap_or(0)
            ),
        };
        format!("{whole}, and {} would be dropped", self.dropped())
    }

    /// What replaying this log drops, in words: committed transactions found past the damage,
    /// else the committed frames the index knew.
    pub fn dropped(&self) -> String {
        if self.dropped_transactions > 0 || self.missing_committed_frames() == 0 {
            format!(
                "{} committed transaction(s) after it",
                self.dropped_transactions
            )
        } else {
            format!(
                "{} committed frame(s) (how many transactions they held is unknown)",
                self.missing_committed_frames()
            )
        }
    }
}

/// Check `<db>-wal` (and its `-shm` index). `None` when there is no log or it is empty.
/// Reads only.
pub fn check_files(db: &Path) -> io::Result<Option<WalCheck>> {
    let file = match File::open(wal_path(db)) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if file.metadata()?.len() == 0 {
        return Ok(None);
    }
    let index = match std::fs::read(shm_path(db)) {
        Ok(b) => index_header(&b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    check(io::BufReader::new(file), index).map(Some)
}

/// The parts of the `-shm` wal-index header that tell what SQLite last knew of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexHeader {
    /// The last committed frame.
    pub max_frame: u32,
    /// The log header's salts, as bytes.
    pub salts: [u8; 8],
}

/// Read the wal-index header: two identical 48-byte copies in the machine's byte order, the
/// second 8 bytes from their end a checksum of the rest. `None` when it is not whole.
pub fn index_header(shm: &[u8]) -> Option<IndexHeader> {
    let (first, second) = (shm.get(..48)?, shm.get(48..96)?);
    if first != second {
        return None;
    }
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(first.get(at..at + 4)?.try_into().ok()?))
    };
    let is_init = *first.get(12)?;
    if word(0)? != VERSION || is_init == 0 {
        return None;
    }
    let sum = checksum(Order::Native, first.get(..40)?, (0, 0));
    if sum != (word(40)?, word(44)?) {
        return None;
    }
    Some(IndexHeader {
        max_frame: word(16)?,
        salts: first.get(32..40)?.try_into().ok()?,
    })
}

#[derive(Debug, Clone, Copy)]
enum Order {
    Big,
    Little,
    Native,
}

impl Order {
    fn word(self, b: &[u8]) -> u32 {
        let b = [b[0], b[1], b[2], b[3]];
        match self {
            Order::Big => u32::from_be_bytes(b),
            Order::Little => u32::from_le_bytes(b),
            Order::Native => u32::from_ne_bytes(b),
        }
    }
}

/// SQLite's WAL checksum: over pairs of 32-bit words, each sum feeding the other.
fn checksum(order: Order, data: &[u8], (mut s0, mut s1): (u32, u32)) -> (u32, u32) {
    for pair in data.chunks_exact(8) {
        s0 = s0.wrapping_add(order.word(&pair[..4])).wrapping_add(s1);
        s1 = s1.wrapping_add(order.word(&pair[4..])).wrapping_add(s0);
    }
    (s0, s1)
}

fn be(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Read as much of `buf` as the reader has; the count read.
fn fill(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut read = 0;
    while read < buf.len() {
        match reader.read(&mut buf[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(read)
}

/// Check a log read from `reader`; `index` is the `-shm` header, if one was readable.
pub fn check(reader: impl Read, index: Option<IndexHeader>) -> io::Result<WalCheck> {
    walk(reader, index, false).map(|(check, _)| check)
}

/// How a frame fares when the log is replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// In the verified prefix SQLite replays (kept if a commit of the prefix follows it).
    Prefix,
    /// After the first bad frame, but it carries the log's salts and verifies against its
    /// predecessor: written and, if a commit follows, committed; SQLite drops it.
    Verified,
    /// Neither: damaged, or left from before the log started over.
    Bad,
}

/// One frame: the page it holds and, for a commit, the database's size in pages after it.
#[derive(Debug, Clone)]
struct Frame {
    page_no: u32,
    commit_size: u32,
    fate: Fate,
    /// The page, when the walk keeps them.
    page: Vec<u8>,
}

/// [`check`], and each frame's fate (with its page when `keep_pages`).
fn walk(
    mut reader: impl Read,
    index: Option<IndexHeader>,
    keep_pages: bool,
) -> io::Result<(WalCheck, Vec<Frame>)> {
    let mut frames = Vec::new();
    let mut out = WalCheck::default();
    let mut header = [0u8; HEADER_LEN];
    let got = fill(&mut reader, &mut header)?;
    out.bytes = got as u64;
    if got < HEADER_LEN {
        // Never written past its start: there is nothing in it to replay or to lose.
        out.trailing_bytes = got as u64;
        return Ok((out, frames));
    }
    let magic = be(&header, 0);
    let order = match magic {
        MAGIC_BE => Order::Big,
        MAGIC_LE => Order::Little,
        _ => Order::Big,
    };
    let page_size = be(&header, 8);
    let page_size_ok = page_size.is_power_of_two() && (512..=65536).contains(&page_size);
    let stored_header_sum = (be(&header, 24), be(&header, 28));
    let computed_header_sum = checksum(order, &header[..24], (0, 0));
    out.header_fault = if magic != MAGIC_BE && magic != MAGIC_LE {
        Some(HeaderFault::Magic(magic))
    } else if !page_size_ok {
        Some(HeaderFault::PageSize(page_size))
    } else if be(&header, 4) != VERSION {
        Some(HeaderFault::Version(be(&header, 4)))
    } else if computed_header_sum != stored_header_sum {
        Some(HeaderFault::Checksum)
    } else {
        None
    };
    if !page_size_ok {
        // Frames cannot even be found; count what is left as bytes.
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest)?;
        out.bytes += rest.len() as u64;
        out.trailing_bytes = rest.len() as u64;
        return Ok((out, frames));
    }
    out.page_size = Some(page_size);

    // With a broken header SQLite replays nothing; frames are judged by the salts of the
    // first one.
    let mut salts: Option<[u8; 8]> = if out.header_fault.is_none() {
        Some([
            header[16], header[17], header[18], header[19], header[20], header[21], header[22],
            header[23],
        ])
    } else {
        None
    };
    let mut in_prefix = out.header_fault.is_none();
    // Before the break: the running checksum SQLite computes. After it: the predecessor's
    // stored checksum, and the one computed for the predecessor from its own predecessor
    // (in case the damage hit the stored checksum rather than the page).
    let mut running = computed_header_sum;
    let mut prev_stored = stored_header_sum;
    let mut prev_computed = computed_header_sum;

    let frame_len = FRAME_HEADER_LEN + page_size as usize;
    let mut frame = vec![0u8; frame_len];
    let mut verified_frames: u64 = 0;
    loop {
        let got = fill(&mut reader, &mut frame)?;
        out.bytes += got as u64;
        if got < frame_len {
            out.trailing_bytes = got as u64;
            break;
        }
        out.frames += 1;
        let n = out.frames;
        let page_no = be(&frame, 0);
        let is_commit = be(&frame, 4) != 0;
        let frame_salts: [u8; 8] = [
            frame[8], frame[9], frame[10], frame[11], frame[12], frame[13], frame[14], frame[15],
        ];
        let stored = (be(&frame, 16), be(&frame, 20));
        let sum_from = |seed| {
            let s = checksum(order, &frame[..8], seed);
            checksum(order, &frame[FRAME_HEADER_LEN..], s)
        };
        let salts = *salts.get_or_insert(frame_salts);
        let mut keep = |fate| {
            frames.push(Frame {
                page_no,
                commit_size: be(&frame, 4),
                fate,
                page: if keep_pages {
                    frame[FRAME_HEADER_LEN..].to_vec()
                } else {
                    Vec::new()
                },
            });
        };
        if in_prefix {
            let next = sum_from(running);
            if page_no != 0 && frame_salts == salts && next == stored {
                running = next;
                verified_frames = n;
                if is_commit {
                    out.replayed_frames = n;
                    out.replayed_transactions += 1;
                }
                prev_stored = stored;
                prev_computed = next;
                keep(Fate::Prefix);
                continue;
            }
            in_prefix = false;
            out.first_bad_frame = Some(n);
        }
        let from_stored = sum_from(prev_stored);
        let verifies = page_no != 0
            && frame_salts == salts
            && (from_stored == stored || sum_from(prev_computed) == stored);
        if verifies && is_commit {
            out.dropped_transactions += 1;
        }
        keep(if verifies { Fate::Verified } else { Fate::Bad });
        prev_stored = stored;
        prev_computed = from_stored;
    }
    out.unfinished_frames = verified_frames - out.replayed_frames;
    if let Some(index) = index
        && out.header_fault.is_none()
        && header[16..24] == index.salts
    {
        out.index_committed_frames = Some(u64::from(index.max_frame));
    }
    Ok((out, frames))
}

/// The database as SQLite would open it beside this log, and as it was committed: two page
/// images, read from the files without letting SQLite touch them.
#[derive(Debug, Clone)]
pub struct Images {
    /// The database file with the replayed prefix of the log folded in: what SQLite keeps.
    pub kept: Vec<u8>,
    /// The same, with every frame past the damage that verifies against its predecessor
    /// folded in too, to the last commit among them: what was committed (and so
    /// acknowledged). The damaged frames are left out, so a page they alone held is as it
    /// was before them.
    pub committed: Vec<u8>,
    /// The pages whose last committed version is in a damaged frame, no later frame holding
    /// them: what only they held is not in `committed`.
    pub damaged_pages: Vec<u32>,
}

/// The two [`Images`] of `db` and its log, with the log's [`WalCheck`]; `None` when there is
/// no log. Each image is a whole database in rollback-journal mode (header bytes 18 and 19
/// set to 1), to be opened in memory (`sqlite3_deserialize`). Reads only.
pub fn images(db: &Path) -> io::Result<Option<(WalCheck, Images)>> {
    let file = match File::open(wal_path(db)) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if file.metadata()?.len() == 0 {
        return Ok(None);
    }
    let index = match std::fs::read(shm_path(db)) {
        Ok(b) => index_header(&b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let (check, frames) = walk(io::BufReader::new(file), index, true)?;
    let main = std::fs::read(db)?;
    let page_size = check.page_size.unwrap_or(4096) as usize;
    let replayed = usize::try_from(check.replayed_frames).unwrap_or(usize::MAX);
    let kept = fold(&main, page_size, frames.iter().take(replayed));
    let written = |f: &&Frame| f.fate != Fate::Bad;
    let last_commit = frames
        .iter()
        .rposition(|f| written(&f) && f.commit_size != 0)
        .map_or(0, |i| i + 1);
    let committed = fold(
        &main,
        page_size,
        frames.iter().take(last_commit).filter(written),
    );
    let mut damaged_pages = Vec::new();
    for (i, f) in frames.iter().enumerate().take(last_commit) {
        let later = &frames[i + 1..last_commit];
        if f.fate == Fate::Bad
            && f.page_no != 0
            && !later.iter().any(|l| written(&l) && l.page_no == f.page_no)
            && !damaged_pages.contains(&f.page_no)
        {
            damaged_pages.push(f.page_no);
        }
    }
    Ok(Some((
        check,
        Images {
            kept,
            committed,
            damaged_pages,
        },
    )))
}

/// `main` with `frames` written over it in order, as a checkpoint would: each page at its
/// place, and the file cut to the size each commit names.
fn fold<'a>(main: &[u8], page_size: usize, frames: impl Iterator<Item = &'a Frame>) -> Vec<u8> {
    let mut image = main.to_vec();
    let mut size = None;
    for f in frames {
        let at = (f.page_no as usize - 1) * page_size;
        // A verified frame is SQLite's own; this only keeps a freak one from asking for
        // terabytes.
        if at > MAX_IMAGE {
            continue;
        }
        if image.len() < at + page_size {
            image.resize(at + page_size, 0);
        }
        image[at..at + page_size].copy_from_slice(&f.page);
        if f.commit_size != 0 {
            size = Some(f.commit_size as usize * page_size);
        }
    }
    if let Some(size) = size {
        image.resize(size, 0);
    }
    // Bytes 18 and 19: the file format's write and read versions, 2 for WAL. In memory there
    // is no log: 1, the rollback journal.
    if image.len() >= 20 {
        image[18] = 1;
        image[19] = 1;
    }
    image
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_runs_over_word_pairs_feeding_each_other() {
        let data: Vec<u8> = (1..=8).collect();
        // Words 0x01020304 and 0x05060708 (big-endian).
        let (a, b) = checksum(Order::Big, &data, (0, 0));
        assert_eq!(a, 0x0102_0304);
        assert_eq!(b, 0x0506_0708u32.wrapping_add(0x0102_0304));
        let (c, _) = checksum(Order::Little, &data, (0, 0));
        assert_eq!(c, 0x0403_0201);
    }

    #[test]
    fn a_short_log_holds_nothing_to_lose() {
        let check = check(&[0x37u8, 0x7f][..], None).unwrap();
        assert!(!check.is_damaged());
        assert_eq!(check.frames, 0);
    }

    #[test]
    fn a_header_without_frames_is_harmless_even_when_broken() {
        let check = check(&[0u8; HEADER_LEN][..], None).unwrap();
        assert_eq!(check.header_fault, Some(HeaderFault::Magic(0)));
        assert!(!check.is_damaged());
        let check = super::check(&[0u8; HEADER_LEN + 100][..], None).unwrap();
        assert!(check.is_damaged(), "{check:?}");
    }

    #[test]
    fn an_index_header_needs_both_copies_and_its_checksum() {
        assert_eq!(index_header(&[0u8; 200]), None);
        let mut hdr = [0u8; 48];
        hdr[..4].copy_from_slice(&VERSION.to_ne_bytes());
        hdr[12] = 1;
        hdr[16..20].copy_from_slice(&7u32.to_ne_bytes());
        hdr[32..40].copy_from_slice(b"saltsalt");
        let (a, b) = checksum(Order::Native, &hdr[..40], (0, 0));
        hdr[40..44].copy_from_slice(&a.to_ne_bytes());
        hdr[44..48].copy_from_slice(&b.to_ne_bytes());
        let shm = [hdr, hdr].concat();
        assert_eq!(
            index_header(&shm),
            Some(IndexHeader {
                max_frame: 7,
                salts: *b"saltsalt"
            })
        );
        let mut torn = shm.clone();
        torn[60] ^= 1;
        assert_eq!(index_header(&torn), None);
    }

    // ---- logs written by real SQLite ----------------------------------------------------

    /// A database in WAL mode that never checkpoints, with a table and `commits` one-row
    /// transactions; the connection stays open so its log and index are as a crash leaves
    /// them.
    struct Live {
        _dir: tempfile::TempDir,
        db: PathBuf,
        conn: rusqlite::Connection,
    }

    impl Live {
        fn new(commits: usize) -> Live {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("t.db");
            let conn = rusqlite::Connection::open(&db).unwrap();
            conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
                .unwrap();
            conn.execute_batch(
                "PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0;
                 CREATE TABLE t (n INTEGER PRIMARY KEY, body TEXT NOT NULL);",
            )
            .unwrap();
            let live = Live {
                _dir: dir,
                db,
                conn,
            };
            live.commit(commits);
            live
        }

        fn commit(&self, commits: usize) {
            for _ in 0..commits {
                self.conn
                    .execute(
                        "INSERT INTO t (body) VALUES (?1)",
                        [&"some words ".repeat(30)],
                    )
                    .unwrap();
            }
        }

        fn wal(&self) -> Vec<u8> {
            std::fs::read(wal_path(&self.db)).unwrap()
        }

        fn index(&self) -> Option<IndexHeader> {
            index_header(&std::fs::read(shm_path(&self.db)).unwrap())
        }

        fn frame_len(&self) -> usize {
            FRAME_HEADER_LEN + 4096
        }
    }

    fn frame_at(live: &Live, n: usize) -> usize {
        HEADER_LEN + (n - 1) * live.frame_len()
    }

    #[test]
    fn a_whole_log_from_sqlite_verifies_to_its_last_commit() {
        let live = Live::new(10);
        let check = check(&live.wal()[..], live.index()).unwrap();
        assert_eq!(check.header_fault, None);
        assert_eq!(check.page_size, Some(4096));
        // The table's creation, then one commit per row.
        assert_eq!(check.replayed_transactions, 11, "{check:?}");
        assert_eq!(check.replayed_frames, check.frames);
        assert_eq!(check.index_committed_frames, Some(check.frames));
        assert_eq!(
            (check.first_bad_frame, check.dropped_transactions),
            (None, 0)
        );
        assert!(!check.is_damaged());
        assert_eq!(check.damage(), "");
    }

    #[test]
    fn a_damaged_page_with_commits_after_it_is_damage() {
        let live = Live::new(10);
        let whole = check(&live.wal()[..], None).unwrap();
        let mut bytes = live.wal();
        let at = frame_at(&live, 3) + FRAME_HEADER_LEN + 1000;
        for b in &mut bytes[at..at + 8] {
            *b ^= 0xff;
        }
        let check = check(&bytes[..], live.index()).unwrap();
        assert_eq!(check.first_bad_frame, Some(3));
        // SQLite keeps the commits in frames 1 and 2; every later one is lost.
        assert_eq!(check.replayed_frames, 2, "{check:?}");
        assert_eq!(
            check.dropped_transactions,
            whole.replayed_transactions - check.replayed_transactions - 1,
            "frame 3 is itself a commit and cannot be verified: {check:?}"
        );
        assert!(check.is_damaged());
        assert!(check.damage().contains("frame 3 of"), "{}", check.damage());
    }

    #[test]
    fn a_damaged_stored_checksum_is_seen_through() {
        let live = Live::new(6);
        let mut bytes = live.wal();
        let at = frame_at(&live, 2) + 16;
        bytes[at] ^= 0x01;
        let check = check(&bytes[..], None).unwrap();
        assert_eq!(check.first_bad_frame, Some(2));
        // Frame 3 still verifies against what frame 2's checksum should have been.
        assert_eq!(check.dropped_transactions, check.frames - 2, "{check:?}");
    }

    #[test]
    fn a_damaged_header_hides_every_frame() {
        let live = Live::new(3);
        let mut bytes = live.wal();
        bytes[13] ^= 0x01; // the checkpoint sequence: only the header's checksum notices
        let check = check(&bytes[..], live.index()).unwrap();
        assert_eq!(check.header_fault, Some(HeaderFault::Checksum));
        assert_eq!(check.replayed_transactions, 0);
        assert_eq!(check.dropped_transactions, 4, "{check:?}");
        assert!(check.is_damaged());
    }

    #[test]
    fn a_log_cut_short_of_what_the_index_knew_is_damage() {
        let live = Live::new(5);
        let bytes = live.wal();
        let cut = &bytes[..frame_at(&live, 3) + 100];
        let check = super::check(cut, live.index()).unwrap();
        assert_eq!(check.replayed_frames, 2);
        assert!(check.missing_committed_frames() > 0, "{check:?}");
        assert!(check.is_damaged());
        assert!(
            check.damage().contains("-shm index knew"),
            "{}",
            check.damage()
        );
        // Without the index, the cut looks like any torn tail: nothing to refuse.
        assert!(!super::check(cut, None).unwrap().is_damaged());
    }

    #[test]
    fn an_unfinished_write_after_the_last_commit_is_not_damage() {
        let live = Live::new(3);
        let committed = check(&live.wal()[..], live.index()).unwrap();
        // A tiny page cache makes SQLite spill the open transaction's pages into the log.
        live.conn
            .execute_batch("PRAGMA cache_size = 2; BEGIN;")
            .unwrap();
        live.commit(300);
        let mut bytes = live.wal();
        // ... and the process dies halfway through writing one more frame.
        bytes.extend_from_within(frame_at(&live, 1)..frame_at(&live, 1) + 2000);
        let check = check(&bytes[..], live.index()).unwrap();
        assert!(check.unfinished_frames > 0, "{check:?}");
        assert_eq!(check.trailing_bytes, 2000);
        assert_eq!(check.replayed_frames, committed.replayed_frames);
        assert!(!check.is_damaged(), "{check:?}");
        live.conn.execute_batch("ROLLBACK").unwrap();
    }

    /// Of a whole log both images are the database as committed; past a damaged page only
    /// the committed one holds the later commits, and it reads as a database.
    #[test]
    fn the_images_keep_what_sqlite_keeps_and_what_was_committed() {
        let live = Live::new(10);
        let rows = |image: &[u8]| {
            let mut conn = rusqlite::Connection::open_in_memory().unwrap();
            conn.deserialize_read_exact(rusqlite::MAIN_DB, image, image.len(), true)
                .unwrap();
            conn.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))
                .unwrap()
        };
        let (_, whole) = images(&live.db).unwrap().unwrap();
        assert_eq!(whole.kept, whole.committed);
        assert_eq!(rows(&whole.committed), 10);

        let mut bytes = live.wal();
        let at = frame_at(&live, 5) + FRAME_HEADER_LEN + 1000;
        for b in &mut bytes[at..at + 8] {
            *b ^= 0xff;
        }
        std::fs::write(wal_path(&live.db), &bytes).unwrap();
        let (check, damaged) = images(&live.db).unwrap().unwrap();
        assert_eq!(check.first_bad_frame, Some(5));
        // What SQLite keeps: the rows committed before frame 5 (the table took a commit).
        assert_eq!(rows(&damaged.kept), check.replayed_transactions as i64 - 1);
        assert!(rows(&damaged.kept) < 10);
        // Each later commit wrote the table's whole page again, the damaged row included.
        assert_eq!(rows(&damaged.committed), 10, "{check:?}");
        assert!(
            damaged.damaged_pages.is_empty(),
            "later frames hold its page"
        );

        // A page written once, in the damaged frame, is not in the committed image: said.
        let live = Live::new(2);
        live.conn
            .execute_batch("CREATE TABLE u (n INTEGER PRIMARY KEY)")
            .unwrap();
        let frames = check_files(&live.db).unwrap().unwrap().frames as usize;
        live.commit(3);
        let mut bytes = live.wal();
        // The new table's own page, written by its commit and never again.
        let page_of = |n: usize| be(&bytes, frame_at(&live, n));
        let only = (1..=frames)
            .rev()
            .find(|&n| page_of(n) != 1 && page_of(n) != 2)
            .unwrap();
        let page = page_of(only);
        let at = frame_at(&live, only) + FRAME_HEADER_LEN + 100;
        bytes[at] ^= 0xff;
        std::fs::write(wal_path(&live.db), &bytes).unwrap();
        let (check, damaged) = images(&live.db).unwrap().unwrap();
        assert!(check.is_damaged(), "{check:?}");
        assert_eq!(damaged.damaged_pages, vec![page]);
    }

    #[test]
    fn frames_left_from_before_a_restart_are_not_damage() {
        let live = Live::new(20);
        let before = check(&live.wal()[..], None).unwrap();
        live.conn
            .query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get::<_, i64>(0))
            .unwrap();
        live.commit(2);
        let bytes = live.wal();
        let check = check(&bytes[..], live.index()).unwrap();
        // The log starts over with new salts; the old frames behind stay in the file.
        assert_eq!(check.frames, before.frames);
        assert_eq!(check.replayed_transactions, 2, "{check:?}");
        assert!(check.first_bad_frame.is_some());
        assert_eq!(check.dropped_transactions, 0);
        assert!(!check.is_damaged(), "{check:?}");
    }
}
