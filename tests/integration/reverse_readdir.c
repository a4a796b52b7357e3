/* Preloaded where FUSE (disorderfs) is not available: readdir() returns every folder's entries
 * in the reverse of the file system's order, for every program of a build (Python's
 * os.scandir, CMake's file(GLOB), the compilers). tests/integration/variations.py builds it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct listing {
    DIR *dir;
    struct dirent *entries;
    size_t count;
    size_t next;
    struct listing *later;
};

static struct listing *listings;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct dirent *(*real_readdir(void))(DIR *) {
    static struct dirent *(*found)(DIR *);
    if (!found) found = (struct dirent *(*)(DIR *))dlsym(RTLD_NEXT, "readdir");
    return found;
}

static struct listing *read_all(DIR *dir) {
    struct listing *listing = calloc(1, sizeof *listing);
    size_t capacity = 0;
    struct dirent *entry;
    listing->dir = dir;
    while ((entry = real_readdir()(dir)) != NULL) {
        if (listing->count == capacity) {
            capacity = capacity ? capacity * 2 : 64;
            listing->entries = realloc(listing->entries, capacity * sizeof *entry);
        }
        memcpy(&listing->entries[listing->count++], entry, sizeof *entry);
    }
    listing->later = listings;
    listings = listing;
    return listing;
}

static struct dirent *reversed(DIR *dir) {
    struct listing *listing;
    struct dirent *entry = NULL;
    pthread_mutex_lock(&lock);
    for (listing = listings; listing && listing->dir != dir; listing = listing->later) {}
    if (!listing) listing = read_all(dir);
    if (listing->next < listing->count)
        entry = &listing->entries[listing->count - 1 - listing->next++];
    pthread_mutex_unlock(&lock);
    return entry;
}

struct dirent *readdir(DIR *dir) { return reversed(dir); }
struct dirent64 *readdir64(DIR *dir) { return (struct dirent64 *)reversed(dir); }

static void forget(DIR *dir) {
    struct listing **link;
    pthread_mutex_lock(&lock);
    for (link = &listings; *link; link = &(*link)->later) {
        if ((*link)->dir == dir) {
            struct listing *gone = *link;
            *link = gone->later;
            free(gone->entries);
            free(gone);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

int closedir(DIR *dir) {
    static int (*real_closedir)(DIR *);
    if (!real_closedir) real_closedir = (int (*)(DIR *))dlsym(RTLD_NEXT, "closedir");
    forget(dir);
    return real_closedir(dir);
}

void rewinddir(DIR *dir) {
    static void (*real_rewinddir)(DIR *);
    if (!real_rewinddir) real_rewinddir = (void (*)(DIR *))dlsym(RTLD_NEXT, "rewinddir");
    forget(dir);
    real_rewinddir(dir);
}
