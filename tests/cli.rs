//! The `smelt` command line as a Unix tool: writing into a pipe whose reader has gone
//! (`smelt info | head -3`) ends it quietly, as it ends `cat` or `ls`, not with a panic.

use std::process::Command;

#[test]
fn a_closed_pipe_ends_the_command_without_a_panic() {
    for args in [
        &["info"][..],
        &["explain", "ew_chain", "--shrink", "16"][..],
    ] {
        // A pipe whose read end is closed before the command starts: its first write fails.
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_smelt"))
            .args(args)
            .stdout(writer)
            .output()
            .expect("the smelt binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "smelt {args:?}: {stderr}");
        // Ended by SIGPIPE (the default action), as other tools are.
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            let status = out.status.signal();
            assert_eq!(status, Some(libc::SIGPIPE), "smelt {args:?}: {stderr}");
        }
    }
}
