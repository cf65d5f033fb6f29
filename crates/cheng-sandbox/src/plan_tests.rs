//! Exact command lines of the sandbox plan, from facts built by hand: these run on any machine,
//! with or without bubblewrap.

use super::*;
use crate::{SandboxRequest, SANDBOX_PATH};

const INIT: &str = "/opt/cheng/cheng-sandbox-init";
const SANDBOX_IDS: (u32, u32) = (1_900_000_007, 1_900_000_007);

fn host(root: bool) -> HostFacts {
    HostFacts {
        root,
        own_ids: (1000, 1000),
        bwrap: "/usr/bin/bwrap".into(),
        landlock_abi: Some(5),
        launcher: Some(INIT.into()),
        setpriv: Some("/usr/bin/setpriv".into()),
        prlimit: Some("/usr/bin/prlimit".into()),
        system_view: vec![
            SystemEntry::Symlink {
                target: "usr/bin".into(),
                link: "/bin".into(),
            },
            SystemEntry::ReadOnly("/usr".into()),
            SystemEntry::Copy("/etc/passwd".into()),
            SystemEntry::ReadOnly("/etc/ssl".into()),
        ],
    }
}

fn facts() -> RunFacts {
    RunFacts {
        etc_copies: None,
        ids: SANDBOX_IDS,
        closed_ancestors: Vec::new(),
        boundary_listable: true,
        owners: Vec::new(),
        protections: Vec::new(),
        io_copies: None,
        proxy_dir: None,
        warnings: Vec::new(),
        memory: MemoryFact::Rlimit,
    }
}

fn request() -> SandboxRequest {
    SandboxRequest::new(
        "/work/ws".into(),
        vec!["/bin/sh".into(), "-c".into(), "true".into()],
    )
}

fn argv(plan: &Plan) -> String {
    plan.args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The system view of [`host`], after the namespace flags.
const VIEW: &str = "--symlink usr/bin /bin --ro-bind-try /usr /usr --perms 755 --dir /etc --perms 444 --file 4 /etc/passwd \
                    --ro-bind-try /etc/ssl /etc/ssl \
                    --dev /dev --proc /proc --perms 1777 --size 134217728 --tmpfs /tmp --perms 755 --dir /run";
/// The init step's rlimits for memory_mb 128 (RLIMIT_AS first).
const RLIMITS: &str = "--rlimit as=134217728 --rlimit fsize=1073741824 --rlimit nofile=1024 --rlimit core=0 --rlimit nproc=256";
const ROOT_CAPS: &str = "--cap-drop ALL --cap-add CAP_SETUID --cap-add CAP_SETGID --cap-add CAP_SETPCAP --cap-add CAP_DAC_READ_SEARCH";

#[test]
fn default_unprivileged() {
    let plan = plan(&request(), &host(false), &facts()).unwrap();
    let expected = format!(
        "--die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net --unshare-user \
         --seccomp 3 --uid 1000 --gid 1000 {VIEW} --perms 755 --dir /work --ro-bind /work/ws /work/ws \
         --remount-ro / --chdir /work/ws --cap-drop ALL \
         -- /proc/self/fd/5 __sandbox-init {RLIMITS} --write /tmp --write /dev -- /bin/sh -c true"
    );
    assert_eq!(argv(&plan), expected);
    assert_eq!(plan.bwrap, Path::new("/usr/bin/bwrap"));
    assert_eq!(
        plan.env,
        vec![
            ("PATH".into(), SANDBOX_PATH.into()),
            ("HOME".into(), "/tmp".into())
        ]
    );
    // The init step sets every rlimit inside; none on bwrap.
    assert!(plan.rlimits.is_empty());
    assert!(plan.fallback.is_none() && plan.idmaps.is_empty());
    let e = &plan.enforcement;
    assert_eq!(e.identity, "uid 1000 (cheng's own, in a user namespace)");
    assert_eq!(e.network, "none (private network namespace)");
    assert_eq!(e.filesystem, "workspace read-only");
    assert_eq!(e.landlock, "enforced (ABI 5): writes only under /tmp, /dev");
    assert_eq!(
        e.memory,
        "RLIMIT_AS 128 MiB (address space, not resident memory)"
    );
    assert!(e.warnings.is_empty(), "{:?}", e.warnings);
    // The mount list is the mount operations of the argv, in order.
    let ops: Vec<String> = plan
        .mounts
        .iter()
        .map(|m| format!("{} {}", m.op, m.dest.display()))
        .collect();
    assert_eq!(
        ops,
        [
            "--symlink /bin",
            "--ro-bind-try /usr",
            "--dir /etc",
            "--file /etc/passwd",
            "--ro-bind-try /etc/ssl",
            "--dev /dev",
            "--proc /proc",
            "--tmpfs /tmp",
            "--dir /run",
            "--dir /work",
            "--ro-bind /work/ws",
            "--remount-ro /",
        ]
    );
    // The copied file is read from the descriptor the argv names, right after seccomp's; the
    // init executable is handed over on the next one and executed from there, not mounted.
    assert_eq!(plan.files, [(PathBuf::from("/etc/passwd"), 4)]);
    assert_eq!(plan.init, Some((PathBuf::from(INIT), 5)));
}

#[test]
fn default_as_root_drops_to_the_run_uid_inside() {
    let plan = plan(&request(), &host(true), &facts()).unwrap();
    let expected = format!(
        "--die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net \
         --seccomp 3 {VIEW} --perms 755 --dir /work --ro-bind /work/ws /work/ws \
         --remount-ro / --chdir /work/ws {ROOT_CAPS} \
         -- /proc/self/fd/5 __sandbox-init --drop-to 1900000007:1900000007 {RLIMITS} --write /tmp --write /dev -- /bin/sh -c true"
    );
    assert_eq!(argv(&plan), expected);
    assert!(
        !argv(&plan).contains("--unshare-user"),
        "root skips the user namespace"
    );
    assert_eq!(
        plan.enforcement.identity,
        "uid 1900000007 (cheng runs as root; unprivileged per-run uid set by cheng's sandbox init step)"
    );
    assert_eq!(plan.enforcement.nproc, "RLIMIT_NPROC 256 on uid 1900000007");
}

#[test]
fn allow_filesystem_binds_the_workspace_writable_and_protects_its_metadata() {
    let mut req = request();
    req.writable = true;
    let mut f = facts();
    f.protections = vec![
        Protection::ReadOnly("/work/ws/.git".into()),
        Protection::Masked("/work/ws/.bashrc".into()),
    ];
    f.warnings = vec!["from protect".into()];
    // As root the workspace's owner is shown as the sandbox uid.
    f.owners = vec![IdmapTarget {
        path: "/work/ws".into(),
        owner_uid: 1000,
        owner_gid: 1000,
        pinned: None,
    }];
    let plan = plan(&req, &host(true), &f).unwrap();
    let expected = format!(
        "--die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net \
         --seccomp 3 {VIEW} --perms 755 --dir /work --bind /work/ws /work/ws \
         --ro-bind /work/ws/.git /work/ws/.git --ro-bind /dev/null /work/ws/.bashrc \
         --remount-ro / --chdir /work/ws {ROOT_CAPS} \
         -- /proc/self/fd/5 __sandbox-init --drop-to 1900000007:1900000007 {RLIMITS} --write /tmp --write /dev --write /work/ws \
         -- /bin/sh -c true"
    );
    assert_eq!(argv(&plan), expected);
    assert_eq!(plan.idmaps, f.owners);
    assert_eq!(
        plan.enforcement.filesystem,
        "workspace writable through an idmapped mount (owner shown as the sandbox uid); protected metadata read-only"
    );
    assert_eq!(
        plan.enforcement.landlock,
        "enforced (ABI 5): writes only under /tmp, /dev, /work/ws"
    );
    assert_eq!(plan.enforcement.warnings, ["from protect"]);
}

#[test]
fn full_disk_read_only_as_root_opens_closed_ancestors_as_tmpfs() {
    let mut req = request();
    req.full_disk_readonly = true;
    req.boundary = "/root/ws".into();
    req.cwd = "/root/ws/sub".into();
    req.extra_ro = vec!["/root/.pyenv/versions/3.12".into()];
    let mut f = facts();
    f.closed_ancestors = vec!["/root".into()];
    let plan = plan(&req, &host(true), &f).unwrap();
    let expected = format!(
        "--die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net \
         --seccomp 3 --ro-bind / / --perms 755 --size 1048576 --tmpfs /root \
         --dev /dev --proc /proc --perms 1777 --size 134217728 --tmpfs /tmp --perms 755 --size 1048576 --tmpfs /run \
         --perms 755 --dir /root/.pyenv --perms 755 --dir /root/.pyenv/versions \
         --ro-bind /root/.pyenv/versions/3.12 /root/.pyenv/versions/3.12 --ro-bind /root/ws /root/ws \
         --chdir /root/ws/sub {ROOT_CAPS} \
         -- /proc/self/fd/4 __sandbox-init --drop-to 1900000007:1900000007 {RLIMITS} --write /tmp --write /dev -- /bin/sh -c true"
    );
    assert_eq!(argv(&plan), expected);
    // No copied file: the init executable is on the first descriptor after seccomp's.
    assert_eq!(plan.init, Some((PathBuf::from(INIT), 4)));
    // Without root nothing is in the way: the whole disk as it is.
    let plan = super::plan(&req, &host(false), &facts()).unwrap();
    assert!(
        argv(&plan).contains("--seccomp 3 --uid 1000 --gid 1000 --ro-bind / / --dev /dev"),
        "{}",
        argv(&plan)
    );
    assert!(!argv(&plan).contains("--dir /root"), "{}", argv(&plan));
}

#[test]
fn request_read_paths_are_bound_read_only_at_their_own_path_from_their_descriptor() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let data = dir.path().canonicalize().unwrap();
    let read = PinnedPath::open(&data).unwrap();
    let mut req = request();
    req.read_paths = vec![read.clone()];
    let mut f = facts();
    f.owners = vec![IdmapTarget::for_pinned(&read)];
    let plan = plan(&req, &host(true), &f).unwrap();
    let data = data.display();
    // Mounted from descriptor 5 (after the copied /etc/passwd on 4), never by path; the init
    // step moves to the next descriptor.
    let expected = format!(
        "--die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net \
         --seccomp 3 {VIEW} --perms 755 --dir /var --perms 755 --dir /var/tmp --ro-bind-fd 5 {data} \
         --perms 755 --dir /work --ro-bind /work/ws /work/ws \
         --remount-ro / --chdir /work/ws {ROOT_CAPS} \
         -- /proc/self/fd/6 __sandbox-init --drop-to 1900000007:1900000007 {RLIMITS} --write /tmp --write /dev -- /bin/sh -c true"
    );
    assert_eq!(argv(&plan), expected);
    assert_eq!(plan.pinned, [(read.clone(), 5)]);
    // Owned by root: shown as the sandbox uid through an idmapped clone of its descriptor, handed
    // to bwrap on the same number; the listable workspace is not.
    let mut wanted = f.owners.clone();
    wanted[0].pinned = Some((read, 5));
    assert_eq!(plan.idmaps, wanted);
    assert_eq!(plan.enforcement.filesystem, "workspace read-only");
}

#[test]
fn the_network_is_the_proxy_bridged_into_a_private_namespace() {
    let mut req = request();
    req.network = Some(cheng_net::Gate::default());
    let mut run = facts();
    run.proxy_dir = Some("/dev/shm/cheng-proxy-1-0".into());
    let plan = plan(&req, &host(false), &run).unwrap();
    let args = argv(&plan);
    // Never the host's network namespace.
    assert!(args.contains("--unshare-net"), "{args}");
    assert!(
        args.contains("--ro-bind /dev/shm/cheng-proxy-1-0 /run/cheng-proxy"),
        "{args}"
    );
    assert!(
        args.contains(
            "--bridge 3128=/run/cheng-proxy/http.sock --bridge 1080=/run/cheng-proxy/socks.sock --"
        ),
        "{args}"
    );
    let env: Vec<String> = plan
        .env
        .iter()
        .map(|(n, v)| format!("{}={}", n.to_string_lossy(), v.to_string_lossy()))
        .collect();
    for wanted in [
        "http_proxy=http://127.0.0.1:3128",
        "HTTPS_PROXY=http://127.0.0.1:3128",
        "ALL_PROXY=socks5h://127.0.0.1:1080",
        "NO_PROXY=localhost,127.0.0.1,::1",
    ] {
        assert!(
            env.iter().any(|e| e == wanted),
            "{wanted} missing from {env:?}"
        );
    }
    assert!(plan
        .enforcement
        .network
        .starts_with("through cheng's filtering proxy"));
    // Without an init step there is no bridge, so no run.
    let mut no_init = req.clone();
    no_init.use_launcher = false;
    let err = plan_err(&no_init, &host(false), &run);
    assert!(err.contains("needs cheng's sandbox init step"), "{err}");
}

fn plan_err(req: &SandboxRequest, host: &HostFacts, run: &RunFacts) -> String {
    match plan(req, host, run) {
        Ok(_) => panic!("planned"),
        Err(e) => e.message,
    }
}

#[test]
fn cgroup_group_replaces_rlimit_as_with_a_fallback_that_has_it() {
    let mut f = facts();
    f.memory =
        MemoryFact::Group("cgroup v2 memory.max 134217728 in /sys/fs/cgroup/x/cheng-run-1".into());
    let plan = plan(&request(), &host(true), &f).unwrap();
    let args = argv(&plan);
    assert!(
        args.contains(
            "--drop-to 1900000007:1900000007 --rlimit fsize=1073741824 --rlimit nofile=1024"
        ),
        "{args}"
    );
    assert!(!args.contains("--rlimit as="), "{args}");
    let (fallback, rlimits) = plan.fallback.as_ref().expect("a fallback under RLIMIT_AS");
    let fallback = fallback
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        fallback.contains(&format!("--drop-to 1900000007:1900000007 {RLIMITS}")),
        "{fallback}"
    );
    assert!(rlimits.is_empty(), "the init step sets them");
    assert_eq!(
        plan.enforcement.memory,
        "cgroup v2 memory.max 134217728 in /sys/fs/cgroup/x/cheng-run-1"
    );
    assert!(
        plan.enforcement
            .warnings
            .iter()
            .any(|w| w.contains("RLIMIT_AS not set")),
        "{:?}",
        plan.enforcement.warnings
    );

    // No delegated cgroup here: RLIMIT_AS, and the warning says why.
    let mut f = facts();
    f.memory = MemoryFact::Unavailable("no cgroup v2 file system is mounted".into());
    let plan = super::plan(&request(), &host(true), &f).unwrap();
    assert!(argv(&plan).contains(RLIMITS));
    assert!(plan.fallback.is_none());
    assert_eq!(
        plan.enforcement.memory,
        "RLIMIT_AS 128 MiB (address space, not resident memory)"
    );
    assert!(plan.enforcement.warnings[0].contains("no cgroup v2 file system is mounted"));
}

#[test]
fn without_an_init_step_root_uses_setpriv_and_rlimits_on_bwrap() {
    let mut req = request();
    req.use_launcher = false;
    let plan = plan(&req, &host(true), &facts()).unwrap();
    let args = argv(&plan);
    assert!(
        !args.contains("/proc/self/fd/") && plan.init.is_none(),
        "{args}"
    );
    assert!(
        args.ends_with(
            "-- /usr/bin/setpriv --reuid=1900000007 --regid=1900000007 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- /bin/sh -c true"
        ),
        "{args}"
    );
    let set: Vec<_> = plan.rlimits.iter().map(|l| (l.resource, l.value)).collect();
    assert!(
        set.contains(&(RlimitResource::Nproc, 256))
            && set.contains(&(RlimitResource::AddressSpace, 128 << 20)),
        "{set:?}"
    );
    assert!(plan
        .enforcement
        .warnings
        .iter()
        .any(|w| w.starts_with("Landlock not applied")));

    // Without setpriv either: fail closed, naming the fix.
    let mut h = host(true);
    h.setpriv = None;
    let err = super::plan(&req, &h, &facts()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::SandboxUnavailable);
    assert!(
        err.message.contains("Install util-linux"),
        "{}",
        err.message
    );
}

#[test]
fn without_an_init_step_unprivileged_uses_prlimit_and_keeps_nproc_off_bwrap() {
    let mut h = host(false);
    h.launcher = None;
    let plan = plan(&request(), &h, &facts()).unwrap();
    assert!(
        argv(&plan).ends_with("-- /usr/bin/prlimit --nproc=256 -- /bin/sh -c true"),
        "{}",
        argv(&plan)
    );
    // RLIMIT_NPROC set on bwrap would count the host uid's processes; it is set inside instead.
    assert!(!plan
        .rlimits
        .iter()
        .any(|l| l.resource == RlimitResource::Nproc));
    assert_eq!(
        plan.enforcement.nproc,
        "RLIMIT_NPROC 256 set inside the user namespace by prlimit"
    );
}

#[test]
fn the_probe_checks_the_flags_the_run_uses() {
    for root in [false, true] {
        for network in [false, true] {
            let mut req = request();
            let mut run = facts();
            if network {
                req.network = Some(cheng_net::Gate::default());
                run.proxy_dir = Some("/dev/shm/cheng-proxy-1-0".into());
            }
            let plan = plan(&req, &host(root), &run).unwrap();
            for flag in probe_flags(root) {
                assert!(
                    plan.args.iter().any(|a| a == flag),
                    "{flag} is probed but not used (root {root}, network {network})"
                );
            }
            let namespaces: Vec<&str> = plan
                .args
                .iter()
                .filter_map(|a| a.to_str())
                .filter(|a| a.starts_with("--unshare"))
                .collect();
            let probed: Vec<&str> = probe_flags(root)
                .into_iter()
                .filter(|a| a.starts_with("--unshare"))
                .collect();
            assert_eq!(namespaces, probed, "root {root}, network {network}");
        }
    }
}

#[test]
fn an_empty_command_is_refused() {
    let mut req = request();
    req.command.clear();
    assert!(plan(&req, &host(false), &facts()).is_err());
}

#[test]
fn a_small_io_directory_is_copied_into_the_read_only_root() {
    let mut req = request();
    req.io_dir = Some("/dev/shm/cheng-sandbox-x/io".into());
    let mut f = facts();
    f.io_copies = Some(vec!["/dev/shm/cheng-sandbox-x/io/input.json".into()]);
    let plan = plan(&req, &host(false), &f).unwrap();
    let args = argv(&plan);
    assert!(
        args.contains(
            "--ro-bind /work/ws /work/ws --perms 755 --dir /run/cheng-io --perms 444 --file 5 /run/cheng-io/input.json --remount-ro / \
             --chdir /work/ws"
        ),
        "{args}"
    );
    assert_eq!(
        plan.files,
        [
            (PathBuf::from("/etc/passwd"), 4),
            (PathBuf::from("/dev/shm/cheng-sandbox-x/io/input.json"), 5)
        ]
    );
    assert_eq!(plan.init, Some((PathBuf::from(INIT), 6)));
    assert!(args.contains("-- /proc/self/fd/6 __sandbox-init"), "{args}");

    // Not copyable (python's result FIFO is an output, or a large input): bound read-only.
    let plan = super::plan(&req, &host(false), &facts()).unwrap();
    assert!(
        argv(&plan).contains("--ro-bind /dev/shm/cheng-sandbox-x/io /run/cheng-io --remount-ro /"),
        "{}",
        argv(&plan)
    );
    // The whole-disk view has no read-only root to copy into (its /run is a tmpfs): bound.
    req.full_disk_readonly = true;
    let plan = super::plan(&req, &host(false), &f).unwrap();
    let args = argv(&plan);
    assert!(
        args.contains("--perms 755 --size 1048576 --tmpfs /run"),
        "{args}"
    );
    assert!(
        args.contains("--ro-bind /dev/shm/cheng-sandbox-x/io /run/cheng-io --chdir"),
        "{args}"
    );
}

#[test]
fn a_directory_of_etc_copies_is_one_bind_unless_a_bind_goes_under_etc() {
    let mut run = facts();
    run.etc_copies = Some("/run/cheng/etc-42".into());
    let plan = plan(&request(), &host(true), &run).unwrap();
    let args = argv(&plan);
    // The copies' directory at /etc, what is bound in /etc on top of it, no file copied.
    assert!(
        args.contains("--ro-bind-try /usr /usr --ro-bind /run/cheng/etc-42 /etc --ro-bind-try /etc/ssl /etc/ssl --dev /dev"),
        "{args}"
    );
    assert!(
        !args.contains("--file") && !args.contains("--dir /etc"),
        "{args}"
    );
    assert!(plan.files.is_empty());
    // The init step then comes on the first descriptor after seccomp's.
    assert!(args.contains("-- /proc/self/fd/4 __sandbox-init"), "{args}");
    // A read path under /etc needs a mount point the read-only directory cannot give: the files
    // are copied one by one, as without the directory.
    let mut req = request();
    req.read_paths
        .push(PinnedPath::open(Path::new("/etc")).unwrap());
    let plan = plan_for(&req, &run);
    let args = argv(&plan);
    assert!(
        args.contains("--perms 755 --dir /etc --perms 444 --file 4 /etc/passwd")
            && !args.contains("etc-42"),
        "{args}"
    );
}

fn plan_for(req: &SandboxRequest, run: &RunFacts) -> Plan {
    plan(req, &host(true), run).unwrap()
}
