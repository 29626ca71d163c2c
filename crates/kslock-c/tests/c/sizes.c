/* Prints the library's type sizes; fails if the header's KSLOCK_*_SIZE or sizeof() differ. */
#include <kslock.h>
#include <stdio.h>

int main(void) {
    printf("%zu %zu %zu\n", kslock_mutex_sizeof(), kslock_rwsem_sizeof(), kslock_cond_sizeof());
    return !(KSLOCK_MUTEX_SIZE == kslock_mutex_sizeof() && KSLOCK_RWSEM_SIZE == kslock_rwsem_sizeof() &&
             KSLOCK_COND_SIZE == kslock_cond_sizeof() && sizeof(kslock_mutex_t) == KSLOCK_MUTEX_SIZE &&
             sizeof(kslock_rwsem_t) == KSLOCK_RWSEM_SIZE && sizeof(kslock_cond_t) == KSLOCK_COND_SIZE);
}
