//! Tests of the output log ([`super`]): records, resume, repair, buffered reading.

use super::*;

/// Read system calls made by this thread so far (`syscr` of /proc/thread-self/io).
fn reads_so_far() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("syscr: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

#[test]
fn a_log_of_tiny_records_is_read_without_a_system_call_per_record() {
    // A process writing one byte at a time leaves one record per write: how many
    // records a log has is the sandbox's choice.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.log");
    let n: u64 = 100_000;
    let mut w = LogWriter::create(&p).unwrap();
    for i in 0..n {
        let kind = if i % 10 == 0 {
            Kind::Stderr
        } else {
            Kind::Stdout
        };
        w.output(kind, b"x").unwrap();
    }
    w.close(&ExitRecord {
        status: 3,
        exit_code: 0,
        message: String::new(),
        code: String::new(),
    })
    .unwrap();
    let len = std::fs::metadata(&p).unwrap().len();

    let before = reads_so_far();
    // The totals and tails of an inspect, and the final record's totals.
    let (out, err, out_n, err_n) = crate::engine::outstream::read_tails(&p, 4).unwrap();
    let (_, _, out_all, _) = crate::engine::outstream::read_tails(&p, 0).unwrap();
    // A stream from the start, payloads read.
    let mut r = LogReader::open(&p).unwrap();
    let mut records = 0;
    while r.next(len, |_, _, _| false).unwrap().is_some() {
        records += 1;
    }
    let reads = reads_so_far() - before;

    assert_eq!((out_n, err_n, out_all), (n - n / 10, n / 10, n - n / 10));
    assert_eq!(
        (out.as_slice(), err.as_slice()),
        (&b"xxxx"[..], &b"xxxx"[..])
    );
    assert_eq!(records, n + 1, "every record and the exit");
    assert!(
        reads < n / 100,
        "{reads} read system calls for 4 walks of {n} records"
    );
}

#[test]
fn a_buffered_reader_follows_a_growing_log_and_never_reads_past_the_committed_length() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.log");
    let mut w = LogWriter::create(&p).unwrap();
    w.output(Kind::Stdout, b"one").unwrap();
    let first = std::fs::metadata(&p).unwrap().len();
    // Written but not yet committed: the reader's buffer may hold it already.
    w.output(Kind::Stdout, b"two").unwrap();
    let mut r = LogReader::open(&p).unwrap();
    let text = |e: Option<(u64, Entry)>| match e {
        Some((seq, Entry::Output { offset, data, .. })) => {
            (seq, offset, String::from_utf8(data).unwrap())
        }
        other => panic!("not output: {:?}", other.map(|(s, _)| s)),
    };
    assert_eq!(
        text(r.next(first, |_, _, _| false).unwrap()),
        (1, 0, "one".into())
    );
    assert!(r.next(first, |_, _, _| false).unwrap().is_none());
    // Its header below the limit, its payload not: nothing yet, and nothing consumed.
    let half = first + HEADER as u64 + 1;
    assert!(
        r.next(half, |_, _, _| false).unwrap().is_none(),
        "half a record"
    );
    let second = std::fs::metadata(&p).unwrap().len();
    assert_eq!(
        text(r.next(second, |_, _, _| false).unwrap()),
        (2, 3, "two".into())
    );
    // Appended after the reader's last read: seen once committed.
    w.output(Kind::Stdout, b"three").unwrap();
    assert!(r.next(second, |_, _, _| false).unwrap().is_none());
    let third = std::fs::metadata(&p).unwrap().len();
    assert_eq!(
        text(r.next(third, |_, _, _| false).unwrap()),
        (3, 6, "three".into())
    );
}

#[test]
fn write_read_resume_and_repair() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.log");
    let mut w = LogWriter::create(&p).unwrap();
    w.output(Kind::Stdout, b"hello ").unwrap();
    w.output(Kind::Stderr, b"oops").unwrap();
    w.output(Kind::Stdout, b"world").unwrap();
    w.close(&ExitRecord {
        status: 3,
        exit_code: 0,
        ..Default::default()
    })
    .unwrap();
    let len = std::fs::metadata(&p).unwrap().len();
    let mut r = LogReader::open(&p).unwrap();
    let mut out = Vec::new();
    let mut seqs = Vec::new();
    while let Some((seq, e)) = r.next(len, |_, _, _| false).unwrap() {
        seqs.push(seq);
        if let Entry::Output {
            kind: Kind::Stdout,
            offset,
            data,
        } = e
        {
            assert_eq!(offset as usize, out.len());
            out.extend(data);
        }
    }
    assert_eq!(out, b"hello world");
    assert_eq!(seqs, vec![1, 2, 3, 4]);

    // Torn tail: append half a record, repair cuts it.
    let mut f = OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(&[1, 100, 0, 0, 0, b'x']).unwrap();
    let (exit, so, se) = repair(&p).unwrap();
    assert!(exit.is_some());
    assert_eq!((so, se), (11, 4));
    assert_eq!(std::fs::metadata(&p).unwrap().len(), len);
}

#[test]
fn refused_output_is_live_only_after_one_marker_and_counted_at_close() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.log");
    let mut w = LogWriter::create(&p).unwrap();
    let mut live = w.live_sender().subscribe();
    // 4 of 10 bytes fit: the prefix is retained, the marker written, the rest live.
    let n = w
        .output_charged(Kind::Stdout, b"0123456789", 4, "quota")
        .unwrap();
    assert_eq!(n, 4);
    w.live_output(Kind::Stdout, b"456789");
    assert!(w.truncated());
    // Later output is never retained, whatever the caller says; warnings go live too.
    assert_eq!(w.output_charged(Kind::Stderr, b"err", 3, "").unwrap(), 0);
    w.live_output(Kind::Stderr, b"err");
    w.warning(&WarningRecord {
        code: "host_not_allowed".into(),
        message: "x".into(),
    })
    .unwrap();
    assert_eq!(w.dropped(), (6, 3));
    w.close(&ExitRecord::default()).unwrap();

    let mut got = Vec::new();
    while let Ok(item) = live.try_recv() {
        got.push(item);
    }
    assert!(
        matches!(&got[0], LiveItem::Output { kind: Kind::Stdout, offset: 4, data } if &data[..] == b"456789")
    );
    assert!(
        matches!(&got[1], LiveItem::Output { kind: Kind::Stderr, offset: 0, data } if &data[..] == b"err")
    );
    assert!(matches!(&got[2], LiveItem::Warning(w) if w.code == "host_not_allowed"));

    let len = std::fs::metadata(&p).unwrap().len();
    let mut r = LogReader::open(&p).unwrap();
    let mut kinds = Vec::new();
    while let Some((_, e)) = r.next(len, |_, _, _| false).unwrap() {
        kinds.push(match e {
            Entry::Output { data, .. } => String::from_utf8(data).unwrap(),
            Entry::Warning(w) => w.code,
            Entry::Exit(_) => "exit".into(),
        });
    }
    assert_eq!(
        kinds,
        ["0123", "output_not_retained", "output_not_retained", "exit"]
    );
}
