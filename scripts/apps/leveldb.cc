// LevelDB driver: THREADS threads put OPS keys each into one database (LevelDB serialises
// writers with std::mutex + std::condition_variable) and read back keys written earlier,
// concurrently; a small write buffer forces compactions on the background thread. Verified:
// every get, then a full scan (count, order, every value).
// usage: leveldb DIR THREADS OPS
#include "driver.h"
#include <leveldb/db.h>
#include <leveldb/write_batch.h>
#include <pthread.h>
#include <string>

static leveldb::DB *db;
static long ops;

static std::string key(long t, long i) {
    char b[48];
    snprintf(b, sizeof b, "k%03ld-%08ld", t, i);
    return b;
}
static std::string value(long t, long i) {
    return key(t, i) + ":" + std::to_string(t * 1000003 + i * 7) + std::string(i % 61, 'v');
}

static void *worker(void *arg) {
    long t = (long)arg;
    std::string got;
    for (long i = 0; i < ops; i++) {
        leveldb::Status s = db->Put(leveldb::WriteOptions(), key(t, i), value(t, i));
        if (!s.ok()) driver_fail("put: %s", s.ToString().c_str());
        if (i % 3 == 0) {
            long j = i / 2;
            s = db->Get(leveldb::ReadOptions(), key(t, j), &got);
            if (!s.ok() || got != value(t, j))
                driver_fail("thread %ld key %ld not read back (%s)", t, j, s.ToString().c_str());
        }
    }
    return nullptr;
}

int main(int argc, char **argv) {
    if (argc < 2) driver_fail("usage: leveldb DIR THREADS OPS");
    long threads = driver_arg(argc, argv, 2, 4);
    ops = driver_arg(argc, argv, 3, 20000);
    leveldb::Options o;
    o.create_if_missing = true;
    o.error_if_exists = true;
    o.write_buffer_size = 256 << 10;
    leveldb::Status s = leveldb::DB::Open(o, argv[1], &db);
    if (!s.ok()) driver_fail("open %s: %s", argv[1], s.ToString().c_str());
    pthread_t th[threads];
    for (long t = 0; t < threads; t++)
        if (pthread_create(&th[t], nullptr, worker, (void *)t) != 0) driver_fail("pthread_create");
    for (long t = 0; t < threads; t++) pthread_join(th[t], nullptr);

    long n = 0;
    leveldb::Iterator *it = db->NewIterator(leveldb::ReadOptions());
    for (long t = 0; t < threads; t++)
        for (long i = 0; i < ops; i++, n++) {
            if (n == 0)
                it->SeekToFirst();
            else
                it->Next();
            if (!it->Valid() || it->key().ToString() != key(t, i) ||
                it->value().ToString() != value(t, i))
                driver_fail("scan: entry %ld is not key %s", n, key(t, i).c_str());
        }
    it->Next();
    if (it->Valid()) driver_fail("scan: more than %ld entries", n);
    delete it;
    delete db;
    printf("ok leveldb: %ld keys written, read back and scanned\n", n);
    driver_preload_line();
    return 0;
}
