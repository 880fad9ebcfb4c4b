/* libishmem_sycl_cl: links the device library into the OpenCL programs a
 * SYCL runtime builds (docs/device.md, "SYCL").
 *
 * A SYCL runtime turns a program's kernels into SPIR-V and builds it with
 * clCreateProgramWithIL and clBuildProgram, which resolve nothing outside
 * the program: the device API's routines stay undefined. This library
 * stands in front of those two entry points (link it into the program
 * before the OpenCL loader, or LD_PRELOAD it). A module that imports a
 * routine of the device API (a name starting with "ishmem") is compiled,
 * linked with ishmem_device.spv and given this PE's device state by
 * libishmem (ishmemx_cl_link_program_in) in the runtime's own context; the
 * runtime's later clBuildProgram of that program does nothing more. Every
 * other program goes to the OpenCL loader untouched. The runtime's build
 * options are not applied to linked programs. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <dlfcn.h>
#include <ishmem.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef cl_program (*create_il_fn)(cl_context, const void *, size_t, cl_int *);
typedef cl_int (*build_fn)(cl_program, cl_uint, const cl_device_id *, const char *,
                           void (*)(cl_program, void *), void *);

/* The OpenCL loader's entry points behind this library: looked up in the
 * loader itself (its handle searches it and its dependencies, never this
 * library, whatever the order the libraries were loaded in), once. */
static create_il_fn real_create_il;
static build_fn real_build;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *next(void *loader, const char *name) {
    void *f = loader ? dlsym(loader, name) : NULL;
    if (!f) {
        fprintf(stderr, "ishmem: libishmem_sycl_cl: %s not found in the OpenCL loader libOpenCL.so.1 (%s)\n", name,
                dlerror());
        abort();
    }
    return f;
}

static void bind(void) {
    void *loader = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_GLOBAL);
    real_create_il = (create_il_fn)next(loader, "clCreateProgramWithIL");
    real_build = (build_fn)next(loader, "clBuildProgram");
}

/* Whether SPIR-V module `il` imports a symbol whose name starts with
 * "ishmem" (OpDecorate id LinkageAttributes "name" Import). */
static int imports_ishmem(const void *il, size_t len) {
    const uint32_t *w = il;
    size_t n = len / 4;
    if (n < 5 || w[0] != 0x07230203u) return 0;
    for (size_t i = 5; i < n;) {
        uint32_t count = w[i] >> 16, op = w[i] & 0xffffu;
        if (count == 0 || i + count > n) return 0;
        /* OpDecorate = 71, LinkageAttributes = 41, Import = 1 */
        if (op == 71 && count >= 5 && w[i + 2] == 41 && w[i + count - 1] == 1 &&
            strncmp((const char *)&w[i + 3], "ishmem", 6) == 0)
            return 1;
        /* Decorations come before the types and functions: stop there. */
        if (op == 54 /* OpFunction */) return 0;
        i += count;
    }
    return 0;
}

/* The programs linked here, which clBuildProgram leaves as they are (a
 * released one's handle may come back for a new program, which is not
 * built yet: hence the build status too). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cl_program *linked;
static size_t n_linked, cap_linked;

static int was_linked(cl_program p) {
    int found = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_linked && !found; i++) found = linked[i] == p;
    pthread_mutex_unlock(&lock);
    cl_device_id device;
    cl_build_status status = CL_BUILD_NONE;
    return found && clGetProgramInfo(p, CL_PROGRAM_DEVICES, sizeof device, &device, NULL) == CL_SUCCESS &&
           clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, NULL) == CL_SUCCESS &&
           status == CL_BUILD_SUCCESS;
}

cl_program clCreateProgramWithIL(cl_context context, const void *il, size_t length, cl_int *errcode_ret) {
    pthread_once(&once, bind);
    if (!il || !imports_ishmem(il, length)) return real_create_il(context, il, length, errcode_ret);
    /* This PE's device, which the context must have (the device library
     * is linked for one device: a context of several is refused). */
    cl_device_id mine = (cl_device_id)ishmemx_cl_device(), devices[2];
    size_t size = 0;
    if (clGetContextInfo(context, CL_CONTEXT_DEVICES, sizeof devices, devices, &size) != CL_SUCCESS ||
        size != sizeof devices[0] || devices[0] != mine) {
        fprintf(stderr,
                "ishmem: PE %d: libishmem_sycl_cl: a program calling the device API is built for a context "
                "that is not of this PE's OpenCL device alone (%zu device(s)); give the SYCL queue that device\n",
                ishmem_my_pe(), size / sizeof devices[0]);
        if (errcode_ret) *errcode_ret = CL_INVALID_CONTEXT;
        return NULL;
    }
    /* Errors stop the job with libishmem's message (compile or link log). */
    cl_program p = ishmemx_cl_link_program_in(context, mine, il, length);
    pthread_mutex_lock(&lock);
    if (n_linked == cap_linked) {
        cap_linked = cap_linked ? 2 * cap_linked : 16;
        cl_program *grown = realloc(linked, cap_linked * sizeof *linked);
        if (!grown) abort();
        linked = grown;
    }
    linked[n_linked++] = p;
    pthread_mutex_unlock(&lock);
    if (errcode_ret) *errcode_ret = CL_SUCCESS;
    return p;
}

cl_int clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list, const char *options,
                      void (*pfn_notify)(cl_program, void *), void *user_data) {
    pthread_once(&once, bind);
    if (!was_linked(program)) return real_build(program, num_devices, device_list, options, pfn_notify, user_data);
    if (pfn_notify) pfn_notify(program, user_data);
    return CL_SUCCESS;
}
