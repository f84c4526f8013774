// The process sandbox: what a hijacked decoder could still do once the CLI or the server has confined itself.
//
// Three layers, each applied to every thread of the process, each reported on its own (a kernel may lack one):
// 1. `PR_SET_NO_NEW_PRIVS`: no exec may ever gain privileges (and the two layers below need it).
// 2. seccomp-bpf, a raw BPF deny list (no library: the filter is a flat list of syscall numbers from the
//    compiling architecture's own headers, checked against that architecture): execve/execveat, new processes
//    (fork, vfork, clone without CLONE_THREAD; clone3 answers ENOSYS so glibc falls back to clone), ptrace and
//    process_vm_*, new sockets (socket, socketpair), bind, listen, connect, mounts, bpf, keys, personality,
//    namespaces, modules, io_uring, … answer EPERM: the call fails, the process lives, the job fails.
// 3. Landlock: the filesystem shrinks to the paths added with `sp_sandbox_allow`; where the kernel's ABI has
//    network rules (4 and later) no TCP bind or connect; where it has scopes (6 and later) no signal to other
//    processes and no connection to abstract Unix sockets outside the process.
// Once entered, nothing undoes it.
#ifndef SP_SANDBOX_H
#define SP_SANDBOX_H

#include "sp_common.h"

/// What a path added to the rules may be used for.
typedef enum {
    /// Read files (and list folders) at or beneath the path.
    SP_SANDBOX_READ = 1,
    /// Read, write, create, rename and remove files and folders beneath the path (for a file: read and write it).
    SP_SANDBOX_WRITE = 2,
    /// Only remove empty folders directly or deeper beneath the path (a spool folder's parent).
    SP_SANDBOX_REMOVE_FOLDER = 4
} sp_sandbox_access;

/// Which layers are on after `sp_sandbox_enter` (1: on every thread, 0: off), and why one is off.
typedef struct {
    int no_new_privileges;
    int seccomp;
    /// The kernel's Landlock ABI version (0: no Landlock).
    int landlock_abi;
    int landlock_filesystem;
    int landlock_network;
    int landlock_scopes;
    /// The threads the Landlock rules were applied to (the caller included).
    int threads;
    /// Why a layer is off ("" when all are on).
    char message[SP_MESSAGE_LENGTH];
} sp_sandbox_report;

/// The paths the process keeps (opaque; from `sp_sandbox_rules_create`).
typedef struct sp_sandbox_rules sp_sandbox_rules;

/// Empty rules (NULL when out of memory).
sp_sandbox_rules *sp_sandbox_rules_create(void);
/// Frees the rules and closes the paths they hold open.
void sp_sandbox_rules_free(sp_sandbox_rules *rules);

/// Adds `path` with `access` (a combination of `sp_sandbox_access`). A path that does not exist is left out
/// (SP_OK: nothing beneath it can be reached anyway); any other failure to open it is SP_ERR_IO with
/// `message` naming it.
sp_status sp_sandbox_allow(sp_sandbox_rules *rules, const char *path, int access, char *message);

/// Confines the process for good: no new privileges, the seccomp filter, then the Landlock rules (every thread
/// of the process, the caller last). Returns SP_OK with `report` filled, whatever layers the kernel lacks
/// (`report->message` says which and why); SP_ERR_LIBRARY when a layer the kernel has could not be applied to
/// every thread (the report says which layers are on).
sp_status sp_sandbox_enter(const sp_sandbox_rules *rules, sp_sandbox_report *report);

/// The kernel's Landlock ABI version, 0 when it has none.
int sp_sandbox_landlock_abi(void);

/// Opens every library the shim loads on first use (libheif, libde265, libavif, libwebp, its demux and mux,
/// Little CMS; sp_lazy.h), as a sandboxed process does before it shrinks its filesystem. Returns how many
/// could not be loaded, the first one's reason in `message` (those formats then fail as they would anyway).
int sp_lazy_load_all(char *message);

/// Test hook for the debug builds' hijack faults: does what a hijacked decoder would and says how the system
/// answered. `action`: 1 execve /bin/sh (-c "exit 97"), 2 open `path` for reading, 3 create the file `path`,
/// 4 socket + connect to 127.0.0.1:`port`, 5 fork (the child exits at once). Returns 0 when the system
/// refused it (errno kept in `*refused_errno`), 1 when it was allowed (and undone where it can be: the file
/// descriptor closed, the child reaped; an allowed execve never returns).
int sp_sandbox_attempt(int action, const char *path, int port, int *refused_errno);

#endif
