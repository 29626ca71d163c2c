/* SQLite driver: THREADS threads share one connection in serialized mode (SQLite's recursive
 * pthread mutexes around every call) to an in-memory database; each inserts OPS rows and bumps a
 * shared counter row after each insert, and reads back its own rows. Verified: the row count,
 * the sum of all values (a closed form), the counter, PRAGMA integrity_check.
 * usage: sqlite THREADS OPS */
#include "driver.h"
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

static sqlite3 *db;
static long ops;

static void check(int rc, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
        driver_fail("sqlite %s: %s (%d)", what, sqlite3_errmsg(db), rc);
}

static int64_t value(long t, long i) { return t * 1000003 + i * 7 + 1; }

static void *worker(void *arg) {
    long t = (long)arg;
    sqlite3_stmt *ins, *upd, *sel;
    check(sqlite3_prepare_v2(db, "INSERT INTO rows(t, i, v) VALUES(?, ?, ?)", -1, &ins, NULL),
          "prepare insert");
    check(sqlite3_prepare_v2(db, "UPDATE counter SET n = n + 1 WHERE id = 0", -1, &upd, NULL),
          "prepare update");
    check(sqlite3_prepare_v2(db, "SELECT v FROM rows WHERE t = ? AND i = ?", -1, &sel, NULL),
          "prepare select");
    for (long i = 0; i < ops; i++) {
        sqlite3_bind_int64(ins, 1, t);
        sqlite3_bind_int64(ins, 2, i);
        sqlite3_bind_int64(ins, 3, value(t, i));
        check(sqlite3_step(ins), "insert");
        sqlite3_reset(ins);
        check(sqlite3_step(upd), "update");
        sqlite3_reset(upd);
        if (i % 4 == 0) {
            sqlite3_bind_int64(sel, 1, t);
            sqlite3_bind_int64(sel, 2, i);
            if (sqlite3_step(sel) != SQLITE_ROW || sqlite3_column_int64(sel, 0) != value(t, i))
                driver_fail("thread %ld row %ld not read back", t, i);
            sqlite3_reset(sel);
        }
    }
    sqlite3_finalize(ins);
    sqlite3_finalize(upd);
    sqlite3_finalize(sel);
    return NULL;
}

static int64_t query_int(const char *sql) {
    sqlite3_stmt *s;
    check(sqlite3_prepare_v2(db, sql, -1, &s, NULL), sql);
    if (sqlite3_step(s) != SQLITE_ROW) driver_fail("no row from %s", sql);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

int main(int argc, char **argv) {
    long threads = driver_arg(argc, argv, 1, 4);
    ops = driver_arg(argc, argv, 2, 2000);
    if (!sqlite3_threadsafe()) driver_fail("SQLite built without thread safety");
    check(sqlite3_open_v2(":memory:", &db,
                          SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL),
          "open");
    check(sqlite3_exec(db,
                       "CREATE TABLE rows(t INTEGER, i INTEGER, v INTEGER, PRIMARY KEY(t, i));"
                       "CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER);"
                       "INSERT INTO counter VALUES(0, 0);",
                       NULL, NULL, NULL),
          "schema");
    pthread_t th[threads];
    for (long t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)t) != 0) driver_fail("pthread_create");
    for (long t = 0; t < threads; t++) pthread_join(th[t], NULL);

    int64_t want_sum = 0;
    for (long t = 0; t < threads; t++)
        for (long i = 0; i < ops; i++) want_sum += value(t, i);
    int64_t rows = query_int("SELECT count(*) FROM rows");
    int64_t sum = query_int("SELECT sum(v) FROM rows");
    int64_t n = query_int("SELECT n FROM counter WHERE id = 0");
    if (rows != threads * ops || sum != want_sum || n != threads * ops)
        driver_fail("rows %lld sum %lld counter %lld, want %ld %lld %ld", (long long)rows,
                    (long long)sum, (long long)n, threads * ops, (long long)want_sum,
                    threads * ops);
    sqlite3_stmt *s;
    check(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL), "integrity_check");
    if (sqlite3_step(s) != SQLITE_ROW ||
        sqlite3_stricmp((const char *)sqlite3_column_text(s, 0), "ok") != 0)
        driver_fail("integrity_check: %s", sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(db);
    printf("ok sqlite: %lld rows, counter %lld, integrity ok\n", (long long)rows, (long long)n);
    driver_preload_line();
    return 0;
}
