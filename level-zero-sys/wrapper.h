/* What level-zero-sys/gen.sh hands to bindgen: the Level Zero core API types
 * and the loader's function-pointer types (ze_pfn*_t), from Debian 12's
 * libze-dev 1.8.12 (spec 1.4). No function is declared for linking: the
 * runtime loads libze_loader.so.1 at run time through one table. */
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/loader/ze_loader.h>

/* Spec 1.6 entry points that Debian's 1.4 headers and loader lack: optional
 * at run time, looked up by name when the loader has them. Our own names,
 * so that they cannot collide with newer headers. */
typedef ze_result_t (*ishmem_ze_pfnMemGetFileDescriptorFromIpcHandleExp_t)(ze_context_handle_t hContext,
                                                                         ze_ipc_mem_handle_t ipcHandle,
                                                                         uint64_t *pHandle);
typedef ze_result_t (*ishmem_ze_pfnMemGetIpcHandleFromFileDescriptorExp_t)(ze_context_handle_t hContext,
                                                                         uint64_t handle,
                                                                         ze_ipc_mem_handle_t *pIpcHandle);
typedef ze_result_t (*ishmem_ze_pfnMemPutIpcHandle_t)(ze_context_handle_t hContext, ze_ipc_mem_handle_t handle);
typedef ze_result_t (*ishmem_ze_pfnCommandListHostSynchronize_t)(ze_command_list_handle_t hCommandList,
                                                               uint64_t timeout);
/* loader/ze_loader.h declares zelLoaderGetVersions without a pointer type. */
typedef ze_result_t (*ishmem_zel_pfnLoaderGetVersions_t)(size_t *num_elems, zel_component_version_t *versions);
