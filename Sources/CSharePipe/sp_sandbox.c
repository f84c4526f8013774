// The process sandbox (see sp_sandbox.h): no new privileges, a seccomp-bpf deny list, Landlock rules.
//
// Why raw BPF and not libseccomp: the filter is a flat deny list (plus two argument checks), built here from
// the compiling architecture's syscall numbers with an architecture check in front; libseccomp would add a
// library to every process for a program of a hundred instructions.
//
// Landlock applies to the calling thread only (the kernels of ABI 7 and older have no flag for the whole
// process), and by the time a server has bound its listener it runs several threads. So the rules are applied
// thread by thread: every other thread of the process gets SIGSYS from tgkill, whose handler (installed for
// the occasion, and chaining to the previous one for any other SIGSYS) restricts that thread with the same
// ruleset; the caller waits for each, walks /proc/self/task again until a walk finds no thread it has not
// done, and restricts itself last. Threads made afterwards inherit the rules of the thread that makes them.
// SIGSYS because Dispatch's worker threads block every signal but the synchronous ones (SIGSEGV, SIGBUS,
// SIGSYS, …), and nothing sends SIGSYS to a process on purpose: the seccomp filter answers with errors, not traps.
#define _GNU_SOURCE
#include "sp_sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

// ---------------------------------------------------------------------------------------------------------
// Landlock, defined here: Debian 12's kernel headers stop at ABI 3.

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

#define SP_LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#define SP_LANDLOCK_RULE_PATH_BENEATH 1

#define SP_FS_EXECUTE (1ULL << 0)
#define SP_FS_WRITE_FILE (1ULL << 1)
#define SP_FS_READ_FILE (1ULL << 2)
#define SP_FS_READ_DIR (1ULL << 3)
#define SP_FS_REMOVE_DIR (1ULL << 4)
#define SP_FS_REMOVE_FILE (1ULL << 5)
#define SP_FS_MAKE_CHAR (1ULL << 6)
#define SP_FS_MAKE_DIR (1ULL << 7)
#define SP_FS_MAKE_REG (1ULL << 8)
#define SP_FS_MAKE_SOCK (1ULL << 9)
#define SP_FS_MAKE_FIFO (1ULL << 10)
#define SP_FS_MAKE_BLOCK (1ULL << 11)
#define SP_FS_MAKE_SYM (1ULL << 12)
#define SP_FS_REFER (1ULL << 13)        // ABI 2
#define SP_FS_TRUNCATE (1ULL << 14)     // ABI 3
#define SP_FS_IOCTL_DEV (1ULL << 15)    // ABI 5
#define SP_NET_BIND_TCP (1ULL << 0)     // ABI 4
#define SP_NET_CONNECT_TCP (1ULL << 1)  // ABI 4
#define SP_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)  // ABI 6
#define SP_SCOPE_SIGNAL (1ULL << 1)                // ABI 6

/// The rights that apply to a file (as opposed to a folder).
#define SP_FS_FILE_RIGHTS (SP_FS_EXECUTE | SP_FS_WRITE_FILE | SP_FS_READ_FILE | SP_FS_TRUNCATE | SP_FS_IOCTL_DEV)

struct sp_landlock_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct sp_landlock_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

int sp_sandbox_landlock_abi(void) {
    long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, SP_LANDLOCK_CREATE_RULESET_VERSION);
    return abi < 0 ? 0 : (int)abi;
}

/// Every filesystem right the kernel's ABI knows: all of them handled, so all of them denied but where a rule
/// grants them.
static uint64_t handled_filesystem_rights(int abi) {
    uint64_t rights = (SP_FS_MAKE_SYM << 1) - 1;  // ABI 1: EXECUTE … MAKE_SYM
    if (abi >= 2) rights |= SP_FS_REFER;
    if (abi >= 3) rights |= SP_FS_TRUNCATE;
    if (abi >= 5) rights |= SP_FS_IOCTL_DEV;
    return rights;
}

// ---------------------------------------------------------------------------------------------------------
// The rules

typedef struct {
    int descriptor;       // O_PATH
    uint64_t rights;      // before masking with what the kernel handles
} sp_sandbox_path;

struct sp_sandbox_rules {
    sp_sandbox_path *paths;
    size_t count, capacity;
};

sp_sandbox_rules *sp_sandbox_rules_create(void) { return calloc(1, sizeof(sp_sandbox_rules)); }

void sp_sandbox_rules_free(sp_sandbox_rules *rules) {
    if (rules == NULL) return;
    for (size_t index = 0; index < rules->count; index++) close(rules->paths[index].descriptor);
    free(rules->paths);
    free(rules);
}

sp_status sp_sandbox_allow(sp_sandbox_rules *rules, const char *path, int access, char *message) {
    if (rules == NULL || path == NULL) {
        sp_copy_message(message, "no rules or no path");
        return SP_ERR_ARGUMENT;
    }
    int descriptor = open(path, O_PATH | O_CLOEXEC);
    if (descriptor < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return SP_OK;
        char text[SP_MESSAGE_LENGTH];
        snprintf(text, sizeof text, "cannot open %s for the sandbox's rules: %s", path, strerror(errno));
        sp_copy_message(message, text);
        return SP_ERR_IO;
    }
    struct stat info;
    int folder = fstat(descriptor, &info) == 0 && S_ISDIR(info.st_mode);
    uint64_t rights = 0;
    if (access & SP_SANDBOX_READ) rights |= SP_FS_READ_FILE | SP_FS_READ_DIR;
    if (access & SP_SANDBOX_WRITE) {
        rights |= SP_FS_READ_FILE | SP_FS_READ_DIR | SP_FS_WRITE_FILE | SP_FS_TRUNCATE | SP_FS_REMOVE_FILE
                  | SP_FS_REMOVE_DIR | SP_FS_MAKE_DIR | SP_FS_MAKE_REG | SP_FS_REFER;
    }
    if (access & SP_SANDBOX_REMOVE_FOLDER) rights |= SP_FS_REMOVE_DIR;
    if (!folder) rights &= SP_FS_FILE_RIGHTS;
    if (rights == 0) {
        close(descriptor);
        return SP_OK;
    }
    if (rules->count == rules->capacity) {
        size_t capacity = rules->capacity ? rules->capacity * 2 : 16;
        sp_sandbox_path *grown = realloc(rules->paths, capacity * sizeof *grown);
        if (grown == NULL) {
            close(descriptor);
            sp_copy_message(message, "out of memory");
            return SP_ERR_MEMORY;
        }
        rules->paths = grown;
        rules->capacity = capacity;
    }
    rules->paths[rules->count++] = (sp_sandbox_path){descriptor, rights};
    return SP_OK;
}

// ---------------------------------------------------------------------------------------------------------
// seccomp

#if defined(__x86_64__)
#define SP_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SP_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SP_ARGUMENT_LOW(index) (offsetof(struct seccomp_data, args) + 8 * (index))
#else
#define SP_ARGUMENT_LOW(index) (offsetof(struct seccomp_data, args) + 8 * (index) + 4)
#endif

#ifndef CLONE_THREAD
#define CLONE_THREAD 0x00010000
#endif

/// The system calls that answer EPERM (those the architecture has).
static const int sp_denied_syscalls[] = {
    // running another program
    __NR_execve, __NR_execveat,
    // new processes (clone and clone3 apart, below)
#ifdef __NR_fork
    __NR_fork,
#endif
#ifdef __NR_vfork
    __NR_vfork,
#endif
    // other processes' memory
    __NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev,
#ifdef __NR_pidfd_getfd
    __NR_pidfd_getfd,
#endif
#ifdef __NR_process_madvise
    __NR_process_madvise,
#endif
    __NR_kcmp,
    // the network: no new sockets, no bind, listen or connect (accept on an existing listener stays)
    __NR_socket, __NR_socketpair, __NR_bind, __NR_listen, __NR_connect,
    // mounts and namespaces
    __NR_mount, __NR_umount2, __NR_pivot_root, __NR_chroot, __NR_unshare, __NR_setns,
#ifdef __NR_open_tree
    __NR_open_tree, __NR_move_mount, __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick,
#endif
#ifdef __NR_mount_setattr
    __NR_mount_setattr,
#endif
    // the kernel's attack surface a decoder never needs
    __NR_bpf, __NR_keyctl, __NR_add_key, __NR_request_key, __NR_personality, __NR_userfaultfd,
    __NR_perf_event_open, __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
    __NR_open_by_handle_at, __NR_name_to_handle_at,
    __NR_init_module, __NR_finit_module, __NR_delete_module, __NR_kexec_load,
#ifdef __NR_kexec_file_load
    __NR_kexec_file_load,
#endif
    __NR_reboot, __NR_swapon, __NR_swapoff, __NR_acct, __NR_quotactl, __NR_syslog, __NR_vhangup,
    __NR_settimeofday, __NR_clock_settime, __NR_clock_adjtime, __NR_adjtimex,
#ifdef __NR_uselib
    __NR_uselib,
#endif
#ifdef __NR_ioperm
    __NR_ioperm, __NR_iopl,
#endif
#ifdef __NR_lookup_dcookie
    __NR_lookup_dcookie,
#endif
};

#define SP_RETURN_ERRNO(code) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((code) & SECCOMP_RET_DATA))
#define SP_RETURN_ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/// Installs the filter on every thread (TSYNC). 0, or the errno why not.
static int install_seccomp(void) {
#ifndef SP_AUDIT_ARCH
    return ENOSYS;
#else
    enum { capacity = 256 };
    struct sock_filter program[capacity];
    size_t count = 0;
#define EMIT(instruction) program[count++] = (struct sock_filter)instruction
    // Another architecture's system calls (i386 through int 0x80 on x86_64): their numbers mean other calls.
    EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SP_AUDIT_ARCH, 1, 0));
    EMIT(SP_RETURN_ERRNO(EPERM));
    EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#if defined(__x86_64__)
    // x32 calls on x86_64 (the same calls under other numbers).
    EMIT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1));
    EMIT(SP_RETURN_ERRNO(EPERM));
#endif
#ifdef __NR_clone3
    // clone3's flags sit in memory BPF cannot read: ENOSYS makes glibc fall back to clone, checked below.
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1));
    EMIT(SP_RETURN_ERRNO(ENOSYS));
#endif
    // clone: threads (CLONE_THREAD) only.
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4));
    EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SP_ARGUMENT_LOW(0)));
    EMIT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
    EMIT(SP_RETURN_ALLOW);
    EMIT(SP_RETURN_ERRNO(EPERM));
    // ioctl: no TIOCSTI (typing into the terminal the process was started from).
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 4));
    EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SP_ARGUMENT_LOW(1)));
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 0, 1));
    EMIT(SP_RETURN_ERRNO(EPERM));
    EMIT(SP_RETURN_ALLOW);
    for (size_t index = 0; index < sizeof sp_denied_syscalls / sizeof sp_denied_syscalls[0]; index++) {
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)sp_denied_syscalls[index], 0, 1));
        EMIT(SP_RETURN_ERRNO(EPERM));
    }
    EMIT(SP_RETURN_ALLOW);
#undef EMIT
    struct sock_fprog filter = {.len = (unsigned short)count, .filter = program};
    long result = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &filter);
    if (result == 0) return 0;
    return result > 0 ? EBUSY : errno;  // > 0: a thread whose filters differ (TSYNC)
#endif
}

// ---------------------------------------------------------------------------------------------------------
// Landlock on every thread

static atomic_int broadcast_ruleset = -1;
static atomic_int broadcast_done = 0;
static atomic_int broadcast_failed = 0;
static struct sigaction broadcast_previous;

static void broadcast_handler(int signal, siginfo_t *info, void *context) {
    int ruleset = atomic_load(&broadcast_ruleset);
    if (ruleset >= 0 && info != NULL && info->si_code == SI_TKILL && info->si_pid == getpid()) {
        int saved = errno;
        long result = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (result == 0) result = syscall(__NR_landlock_restrict_self, ruleset, 0);
        if (result != 0) atomic_fetch_add(&broadcast_failed, 1);
        atomic_fetch_add(&broadcast_done, 1);
        errno = saved;
        return;
    }
    // Not ours: what was there before.
    if (broadcast_previous.sa_flags & SA_SIGINFO) {
        if (broadcast_previous.sa_sigaction != NULL) broadcast_previous.sa_sigaction(signal, info, context);
    } else if (broadcast_previous.sa_handler == SIG_DFL) {
        sigaction(signal, &broadcast_previous, NULL);
        raise(signal);
    } else if (broadcast_previous.sa_handler != SIG_IGN && broadcast_previous.sa_handler != NULL) {
        broadcast_previous.sa_handler(signal);
    }
}

typedef struct {
    pid_t *tids;
    size_t count, capacity;
} tid_set;

static int tid_set_contains(const tid_set *set, pid_t tid) {
    for (size_t index = 0; index < set->count; index++)
        if (set->tids[index] == tid) return 1;
    return 0;
}

static int tid_set_add(tid_set *set, pid_t tid) {
    if (set->count == set->capacity) {
        size_t capacity = set->capacity ? set->capacity * 2 : 64;
        pid_t *grown = realloc(set->tids, capacity * sizeof *grown);
        if (grown == NULL) return 0;
        set->tids = grown;
        set->capacity = capacity;
    }
    set->tids[set->count++] = tid;
    return 1;
}

/// Restricts every thread but the caller with `ruleset`; returns the number restricted, or -1 with `message`.
static int restrict_other_threads(int ruleset, char *message) {
    static atomic_flag installed = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&installed)) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = broadcast_handler;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&action.sa_mask);
        // Kept installed: a signal still pending on a thread that was slow to take it must not meet SIG_DFL
        // (a core dump).
        if (sigaction(SIGSYS, &action, &broadcast_previous) != 0) {
            snprintf(message, SP_MESSAGE_LENGTH, "cannot install the SIGSYS handler: %s", strerror(errno));
            return -1;
        }
    }
    atomic_store(&broadcast_ruleset, ruleset);
    pid_t self = (pid_t)syscall(SYS_gettid), process = getpid();
    tid_set done = {0};
    int restricted = 0, result = 0;
    for (int pass = 0; pass < 100 && result == 0; pass++) {
        DIR *tasks = opendir("/proc/self/task");
        if (tasks == NULL) {
            snprintf(message, SP_MESSAGE_LENGTH, "cannot list /proc/self/task: %s", strerror(errno));
            result = -1;
            break;
        }
        int found = 0;
        struct dirent *entry;
        while (result == 0 && (entry = readdir(tasks)) != NULL) {
            pid_t tid = (pid_t)atoi(entry->d_name);
            if (tid <= 0 || tid == self || tid_set_contains(&done, tid)) continue;
            found++;
            if (!tid_set_add(&done, tid)) {
                snprintf(message, SP_MESSAGE_LENGTH, "out of memory listing threads");
                result = -1;
                break;
            }
            int before = atomic_load(&broadcast_done);
            if (syscall(SYS_tgkill, process, tid, SIGSYS) != 0) continue;  // the thread has ended
            // Wait for it (a thread in a blocking call takes the signal at once; 2 s is far beyond that).
            struct timespec pause = {0, 20000};
            int waited = 0;
            while (atomic_load(&broadcast_done) == before && waited < 100000) {
                nanosleep(&pause, NULL);
                waited++;
                // A thread that ended after the signal was sent never runs the handler.
                if (waited % 500 == 0 && syscall(SYS_tgkill, process, tid, 0) != 0) break;
            }
            if (atomic_load(&broadcast_done) != before) restricted++;
            else if (syscall(SYS_tgkill, process, tid, 0) == 0) {
                snprintf(message, SP_MESSAGE_LENGTH, "thread %d did not take the Landlock rules", (int)tid);
                result = -1;
            }
        }
        closedir(tasks);
        if (found == 0) break;
    }
    free(done.tids);
    if (result == 0 && atomic_load(&broadcast_failed) > 0) {
        snprintf(message, SP_MESSAGE_LENGTH, "%d thread(s) refused the Landlock rules",
                 atomic_load(&broadcast_failed));
        result = -1;
    }
    return result == 0 ? restricted : -1;
}

/// Builds the ruleset and applies it to every thread. Fills the Landlock fields of `report`.
static sp_status apply_landlock(const sp_sandbox_rules *rules, sp_sandbox_report *report, char *why) {
    int abi = sp_sandbox_landlock_abi();
    report->landlock_abi = abi;
    if (abi <= 0) {
        snprintf(why, SP_MESSAGE_LENGTH, "the kernel has no Landlock (%s)", strerror(errno));
        return SP_OK;
    }
    struct sp_landlock_ruleset_attr attributes = {0};
    attributes.handled_access_fs = handled_filesystem_rights(abi);
    if (abi >= 4) attributes.handled_access_net = SP_NET_BIND_TCP | SP_NET_CONNECT_TCP;
    if (abi >= 6) attributes.scoped = SP_SCOPE_ABSTRACT_UNIX_SOCKET | SP_SCOPE_SIGNAL;
    int ruleset = (int)syscall(__NR_landlock_create_ruleset, &attributes, sizeof attributes, 0);
    if (ruleset < 0) {
        snprintf(why, SP_MESSAGE_LENGTH, "landlock_create_ruleset: %s", strerror(errno));
        return SP_ERR_LIBRARY;
    }
    for (size_t index = 0; rules != NULL && index < rules->count; index++) {
        struct sp_landlock_path_beneath_attr rule = {
            .allowed_access = rules->paths[index].rights & attributes.handled_access_fs,
            .parent_fd = rules->paths[index].descriptor,
        };
        if (rule.allowed_access == 0) continue;
        if (syscall(__NR_landlock_add_rule, ruleset, SP_LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
            snprintf(why, SP_MESSAGE_LENGTH, "landlock_add_rule: %s", strerror(errno));
            close(ruleset);
            return SP_ERR_LIBRARY;
        }
    }
    int others = restrict_other_threads(ruleset, why);
    if (others < 0) {
        close(ruleset);
        return SP_ERR_LIBRARY;
    }
    if (syscall(__NR_landlock_restrict_self, ruleset, 0) != 0) {
        snprintf(why, SP_MESSAGE_LENGTH, "landlock_restrict_self: %s", strerror(errno));
        close(ruleset);
        return SP_ERR_LIBRARY;
    }
    close(ruleset);
    report->threads = others + 1;
    report->landlock_filesystem = 1;
    report->landlock_network = abi >= 4;
    report->landlock_scopes = abi >= 6;
    if (abi < 4) snprintf(why, SP_MESSAGE_LENGTH, "Landlock ABI %d has no network rules", abi);
    else if (abi < 6) snprintf(why, SP_MESSAGE_LENGTH, "Landlock ABI %d has no scopes", abi);
    return SP_OK;
}

// ---------------------------------------------------------------------------------------------------------
// LeakSanitizer in a confined process (sanitized builds only)
//
// LeakSanitizer checks for leaks at exit from a tracer task (clone with CLONE_VM | CLONE_UNTRACED) that
// ptraces every thread to read its stack. In a confined process both are refused by the filter, and even if
// they were not, Landlock lets a task trace only tasks of its own domain or below, while every thread that
// predates the sandbox restricted itself into a domain of its own. The check would die ("LeakSanitizer has
// encountered a fatal error", exit status 1) or, allowed to run, report false leaks from the threads it could
// not stop. So a sanitized process that entered the sandbox skips the exit-time leak check (the hook below is
// LeakSanitizer's own); AddressSanitizer's checks stay on, and the same code's leaks are checked in the test
// process itself and in the runs with --no-sandbox. The filter is the same in every build.

static atomic_int sandbox_entered = 0;

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define SP_LEAK_SANITIZER 1
#endif
#endif
#if !defined(SP_LEAK_SANITIZER) && defined(__SANITIZE_ADDRESS__)
#define SP_LEAK_SANITIZER 1
#endif

#ifdef SP_LEAK_SANITIZER
__attribute__((visibility("default"))) int __lsan_is_turned_off(void) { return atomic_load(&sandbox_entered); }
#endif

sp_status sp_sandbox_enter(const sp_sandbox_rules *rules, sp_sandbox_report *report) {
    memset(report, 0, sizeof *report);
    atomic_store(&sandbox_entered, 1);
    char seccomp_why[SP_MESSAGE_LENGTH] = "", landlock_why[SP_MESSAGE_LENGTH] = "";
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        snprintf(report->message, SP_MESSAGE_LENGTH, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
        return SP_ERR_LIBRARY;
    }
    report->no_new_privileges = 1;
    sp_status status = SP_OK;
    int seccomp_error = install_seccomp();
    if (seccomp_error == 0) {
        report->seccomp = 1;
    } else {
        snprintf(seccomp_why, sizeof seccomp_why, "seccomp: %s", strerror(seccomp_error));
        // A kernel without seccomp filters says EINVAL (or ENOSYS); anything else is a failure.
        if (seccomp_error != EINVAL && seccomp_error != ENOSYS) status = SP_ERR_LIBRARY;
    }
    if (apply_landlock(rules, report, landlock_why) != SP_OK) status = SP_ERR_LIBRARY;
    snprintf(report->message, SP_MESSAGE_LENGTH, "%.120s%s%.120s", seccomp_why,
             seccomp_why[0] && landlock_why[0] ? "; " : "", landlock_why);
    return status;
}

// ---------------------------------------------------------------------------------------------------------
// The debug builds' hijack faults

int sp_sandbox_attempt(int action, const char *path, int port, int *refused_errno) {
    *refused_errno = 0;
    switch (action) {
    case 1: {
        char *arguments[] = {"sh", "-c", "exit 97", NULL};
        execve("/bin/sh", arguments, environ);
        break;
    }
    case 2: {
        int descriptor = open(path, O_RDONLY | O_CLOEXEC);
        if (descriptor >= 0) { close(descriptor); return 1; }
        break;
    }
    case 3: {
        int descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (descriptor >= 0) { close(descriptor); return 1; }
        break;
    }
    case 4: {
        int descriptor = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (descriptor < 0) break;
        struct sockaddr_in address = {0};
        address.sin_family = AF_INET;
        address.sin_port = htons((uint16_t)port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int connected = connect(descriptor, (struct sockaddr *)&address, sizeof address);
        int saved = errno;
        close(descriptor);
        // A refused connection (nothing listens) still means the sandbox let it try.
        if (connected == 0 || saved == ECONNREFUSED) return 1;
        errno = saved;
        break;
    }
    case 5: {
        pid_t child = fork();
        if (child == 0) _exit(0);
        if (child > 0) { waitpid(child, NULL, 0); return 1; }
        break;
    }
    default:
        errno = EINVAL;
        break;
    }
    *refused_errno = errno;
    return 0;
}
