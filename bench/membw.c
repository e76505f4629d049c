// Memory read bandwidth of this machine, for the decode bound in docs/benchmarks.md (`npm run bench` compiles and
// runs it). Each of T threads sums its share of a 1 GiB buffer (64-bit adds, vectorised by the compiler); the figure
// is bytes read / wall time, best of 5 passes after one warm-up pass. Output: one JSON object per thread count,
// {"threads":T,"read_GBps":X}, for T = 1 .. argv[1].
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUFFER_BYTES (1ull << 30)
#define PASSES 5

typedef struct {
  const uint64_t* begin;
  size_t count;
  uint64_t sum;
  pthread_barrier_t* barrier;
} Job;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void* read_share(void* arg) {
  Job* job = (Job*)arg;
  pthread_barrier_wait(job->barrier);
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  const uint64_t* p = job->begin;
  for (size_t i = 0; i + 4 <= job->count; i += 4) {
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
  }
  job->sum = s0 + s1 + s2 + s3;
  pthread_barrier_wait(job->barrier);
  return NULL;
}

static double measure(const uint64_t* buffer, int threads) {
  const size_t words = BUFFER_BYTES / sizeof(uint64_t);
  const size_t share = words / (size_t)threads;
  double best = 0;
  for (int pass = 0; pass <= PASSES; pass++) {
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
    pthread_t tid[256];
    Job jobs[256];
    for (int t = 0; t < threads; t++) {
      jobs[t] = (Job){buffer + (size_t)t * share, share, 0, &barrier};
      pthread_create(&tid[t], NULL, read_share, &jobs[t]);
    }
    pthread_barrier_wait(&barrier);
    const double start = now_s();
    pthread_barrier_wait(&barrier);
    const double seconds = now_s() - start;
    uint64_t sink = 0;
    for (int t = 0; t < threads; t++) {
      pthread_join(tid[t], NULL);
      sink += jobs[t].sum;
    }
    pthread_barrier_destroy(&barrier);
    if (sink == 42) fputs("", stderr);  // keeps the sums alive
    const double gbps = (double)(share * (size_t)threads * sizeof(uint64_t)) / seconds / 1e9;
    if (pass > 0 && gbps > best) best = gbps;
  }
  return best;
}

int main(int argc, char** argv) {
  int max_threads = argc > 1 ? atoi(argv[1]) : 1;
  if (max_threads < 1) max_threads = 1;
  if (max_threads > 256) max_threads = 256;
  uint64_t* buffer = (uint64_t*)aligned_alloc(64, BUFFER_BYTES);
  if (!buffer) {
    fputs("membw: cannot allocate 1 GiB\n", stderr);
    return 1;
  }
  memset(buffer, 1, BUFFER_BYTES);
  for (int t = 1; t <= max_threads; t++) printf("{\"threads\":%d,\"read_GBps\":%.2f}\n", t, measure(buffer, t));
  free(buffer);
  return 0;
}
