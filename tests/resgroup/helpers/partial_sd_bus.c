// SPDX-License-Identifier: Apache-2.0
// A shared library that exports every sd-bus function sealrun resolves except sd_bus_message_skip
// (sd_bus_library_test): proves that the loader checks each symbol, not only the first, and names
// the one that is missing. The functions are never called; only their names matter.
void sd_bus_open_system(void) {}
void sd_bus_open_user(void) {}
void sd_bus_new(void) {}
void sd_bus_set_address(void) {}
void sd_bus_set_bus_client(void) {}
void sd_bus_start(void) {}
void sd_bus_flush_close_unref(void) {}
void sd_bus_process(void) {}
void sd_bus_wait(void) {}
void sd_bus_call(void) {}
void sd_bus_match_signal(void) {}
void sd_bus_slot_unref(void) {}
void sd_bus_get_property_trivial(void) {}
void sd_bus_get_property_string(void) {}
void sd_bus_message_new_method_call(void) {}
void sd_bus_message_unref(void) {}
void sd_bus_message_append_basic(void) {}
void sd_bus_message_append_array(void) {}
void sd_bus_message_append_strv(void) {}
void sd_bus_message_open_container(void) {}
void sd_bus_message_close_container(void) {}
void sd_bus_message_enter_container(void) {}
void sd_bus_message_exit_container(void) {}
void sd_bus_message_read_basic(void) {}
void sd_bus_error_free(void) {}
void sd_bus_error_is_set(void) {}
void sd_bus_error_has_name(void) {}
