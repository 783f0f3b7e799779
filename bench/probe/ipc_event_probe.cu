// Which CUDA calls leave the driver's /dev/shm/cuda.shm.* file behind (bench/probe/run_cuda_shm_probe.sh runs every
// mode in its own process): an interprocess event created only, its handle exported (destroyed or kept), the
// same with cudaDeviceReset, a child that opens the handle, and an IPC memory handle alone.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#define T(x) do { cudaError_t rc_ = (x); if (rc_ != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(rc_)); std::exit(1); } } while (0)
int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "destroy";
  if (!std::strcmp(mode, "child")) {  // open the handle given in hex on the command line
    cudaIpcEventHandle_t h;
    for (int i = 0; i < (int)sizeof h; ++i) { unsigned v; std::sscanf(argv[2] + 2 * i, "%2x", &v); h.reserved[i] = (char)v; }
    cudaEvent_t e;
    T(cudaIpcOpenEventHandle(&e, h));
    T(cudaEventSynchronize(e));
    if (argc > 3 && !std::strcmp(argv[3], "destroy")) T(cudaEventDestroy(e));
    return 0;
  }
  T(cudaSetDevice(0));
  if (!std::strcmp(mode, "create_only")) {
    cudaEvent_t c;
    T(cudaEventCreateWithFlags(&c, cudaEventInterprocess | cudaEventDisableTiming));
    T(cudaEventRecord(c, 0));
    T(cudaEventSynchronize(c));
    T(cudaEventDestroy(c));
    return 0;
  }
  if (!std::strcmp(mode, "mem_handle")) {
    void* p = nullptr;
    T(cudaMalloc(&p, 1 << 21));
    cudaIpcMemHandle_t h;
    T(cudaIpcGetMemHandle(&h, p));
    T(cudaFree(p));
    return 0;
  }
  cudaEvent_t e;
  T(cudaEventCreateWithFlags(&e, cudaEventInterprocess | cudaEventDisableTiming));
  cudaIpcEventHandle_t h;
  T(cudaIpcGetEventHandle(&h, e));
  T(cudaEventRecord(e, 0));
  if (!std::strcmp(mode, "child_opens") || !std::strcmp(mode, "child_opens_destroys")) {
    char hex[2 * sizeof h + 1];
    for (int i = 0; i < (int)sizeof h; ++i) std::sprintf(hex + 2 * i, "%02x", (unsigned char)h.reserved[i]);
    pid_t p = fork();
    if (p == 0) { execl(argv[0], argv[0], "child", hex, !std::strcmp(mode, "child_opens_destroys") ? "destroy" : "keep", (char*)nullptr); _exit(127); }
    int st = 0; waitpid(p, &st, 0);
    std::printf("child exit %d\n", WEXITSTATUS(st));
  }
  if (std::strcmp(mode, "keep")) T(cudaEventDestroy(e));
  if (!std::strcmp(mode, "reset")) T(cudaDeviceReset());
  return 0;
}
