"""The slow set: tests that `pytest -q` (the README's command, `-m 'not slow'`) leaves to
`pytest -q -m slow`, which .ci/run runs after it. Every test still runs in CI.

Besides the tests marked `@pytest.mark.slow` in their own files, these are slow by measure:
each took 5 s or more (setup + call + teardown, any parameter) in a full default run
(`--durations=0`, 2026-11-25, a 2-core machine at load 10, about 4.6 times slower than quiet),
or, for tests added since and in a second full run (load 10-14), 15 s or more; or belongs to a whole file of real-client, abuse or replica tests. Kept in one list (rather
than a decorator in each file) so that the files stay as their authors left them; an entry
that no longer names a test fails the collection of its file (tests/conftest.py).
"""

from __future__ import annotations

# Whole files: HTTP abuse, replicas, Kimi CLI differential (a real client).
SLOW_FILES = frozenset(
    {
        "tests/stress/test_http_abuse.py",
        "tests/server/test_replicas.py",
        "tests/interop/test_kimi_differential.py",
    }
)

# file::function (every parameter of it).
SLOW_TESTS = frozenset(
    {
        "tests/server/test_approval.py::test_a_handshake_http_question_answered_slowly_still_counts",
        "tests/server/test_approval.py::test_http_approval_in_both_eras",
        "tests/deploy/test_docker.py::test_entrypoint_with_a_token_passes_the_healthcheck_and_serves_both_eras",
        "tests/server/test_interop.py::test_inspector_cli_lists_strictly_and_calls_every_read_tool",
        "tests/deploy/test_readme_configs.py::test_claude_desktop_and_http_lines_serve_the_inspector",
        "tests/deploy/test_readme_configs.py::test_docker_stdio_lines_override_the_images_http_entrypoint",
        "tests/deploy/test_readme_configs.py::test_install_lines_write_configurations_that_start",
        "tests/deploy/test_readme_configs.py::test_readme_entry_starts_and_serves_the_tools",
        "tests/server/test_roots.py::test_a_handshake_client_that_only_posts_is_asked_for_roots_on_its_call_stream",
        "tests/server/test_shutdown.py::test_http_sigterm_cancels_a_running_grep_kills_rg_and_answers_the_caller",
        "tests/server/test_shutdown.py::test_http_stops_with_idle_clients_connected_and_ends_their_streams_properly",
        "tests/server/test_shutdown.py::test_stdio_sigterm_cancels_a_running_grep_kills_rg_and_answers_the_caller",
        "tests/server/test_stdio_transport.py::test_a_burst_over_pipes_is_answered_in_full",
        "tests/server/test_stdio_transport.py::test_a_request_with_a_lone_surrogate_escape_is_answered_not_dropped",
        "tests/stress/test_concurrency.py::test_inspector_load_over_http_has_no_errors_and_steady_memory",
        "tests/stress/test_concurrency.py::test_ten_http_clients_at_once_keep_their_approvals_to_themselves",
        "tests/stress/test_exhaustion.py::test_directory_with_twenty_thousand_entries",
        "tests/stress/test_exhaustion.py::test_grep_matching_every_line_past_the_output_buffer",
        "tests/stress/test_exhaustion.py::test_grep_past_its_timeout_answers_kills_rg_and_serves_the_next_call",
        "tests/stress/test_exhaustion.py::test_one_gib_sparse_text_file_reads_in_bounded_memory",
        "tests/stress/test_fuzz.py::test_fuzzed_arguments_give_a_result_or_a_clean_error",
        "tests/stress/test_misbehaviour.py::test_a_state_sealed_by_another_server_is_refused",
        "tests/stress/test_misbehaviour.py::test_http_connection_dropped_mid_grep_kills_rg_at_once_on_2026_connections",
        "tests/test_cli.py::test_http_on_loopback_says_whether_any_local_process_can_connect",
        "tests/test_cli.py::test_stdio_started_at_a_terminal_says_what_it_waits_for_and_ends_on_ctrl_d",
        "tests/test_install.py::test_every_client_configuration_starts_as_written",
        "tests/test_install.py::test_flags_given_to_install_reach_the_server",
        "tests/test_install.py::test_http_configurations_reach_the_endpoint",
        "tests/deploy/test_readme.py::test_readme_check_gives_the_answer_it_shows",
        "tests/tools/test_crash_safety.py::test_killed_writer_leaves_old_or_new_content",
        "tests/tools/test_glob.py::test_a_1100_level_tree_is_an_ordinary_result",
        "tests/tools/test_glob.py::test_a_cancelled_glob_stops_walking",
        "tests/tools/test_glob.py::test_an_undecodable_name_over_stdio_keeps_the_server_up",
        "tests/tools/test_grep.py::test_ignore_files_that_are_links_or_devices_are_never_read",
        "tests/tools/test_grep.py::test_same_call_same_bytes_and_paging_visits_every_result_once",
        "tests/tools/test_grep.py::test_what_is_said_of_skipped_secrets_does_not_depend_on_their_content",
        "tests/tools/test_read_media.py::test_client_flag_kimi_sets_the_budget_and_result_budget_flag_wins",
        "tests/tools/test_read_media.py::test_heavy_transparent_png_on_a_small_budget_keeps_alpha_as_webp",
        "tests/tools/test_read_media.py::test_ico_with_a_huge_embedded_png_is_refused_before_any_decode",
        "tests/tools/test_read_media.py::test_large_photo_comes_back_as_one_jpeg_within_the_default_budget",
        "tests/tools/test_read_media.py::test_line_art_stays_png_when_downscaled",
        "tests/tools/test_read_media.py::test_photo_over_stdio_is_one_image_block_under_one_mib",
        "tests/tools/test_read_media.py::test_png_bomb_is_refused_from_its_header_and_the_server_stays_small",
        "tests/tools/test_read_media.py::test_video_with_frames_over_the_budget_is_refused_before_any_frame_is_decoded",
        "tests/tools/test_read_media.py::test_webp_with_a_canvas_over_the_budget_is_refused_before_pillow_opens_it",
        "tests/tools/test_sensitive_writes.py::test_over_http_confined_nothing_is_told_either",
        "tests/tools/test_write_file.py::test_file_size_limit_gives_a_clear_error_over_stdio",
        # Issue 25, third pass (2026-11-25): CPU time per test (this process + the servers it
        # reaped, all parameters; a load-independent measure) of 2 s or more in a default run
        # at load 10, where the default set still covers each tool, both transports in both
        # eras (tests/server/test_transports.py) and the gate in-process; and the real clients
        # (the MCP Inspector, the official SDK's session) left in the default set.
        "tests/server/test_interop.py::test_inspector_cli_is_refused_without_the_right_token",
        "tests/server/test_interop.py::test_inspector_cli_reports_a_tool_error_as_such",
        "tests/server/test_interop.py::test_official_sdk_session_lists_calls_every_read_tool_and_gets_log_messages",
        "tests/test_install.py::test_the_inspector_reads_the_generic_http_entry_as_http",
        "tests/server/test_approval.py::test_stdio_subprocess_approved_writes_one_session_and_the_stderr_log",
        "tests/server/test_shutdown.py::test_a_stdio_server_without_loop_signal_handlers_serves_and_ends_with_stdin",
        "tests/server/test_transports.py::test_an_undecodable_file_name_never_stops_the_stdio_server",
        "tests/security/test_credential_files.py::test_submodule_config_over_confined_http",
        "tests/security/test_credential_files.py::test_submodule_config_over_stdio",
        "tests/security/test_invisible_and_backslash.py::test_the_same_over_stdio",
        "tests/stress/test_concurrency.py::test_fifty_concurrent_approved_edits_from_clients_of_both_eras_lose_nothing",
        "tests/stress/test_exhaustion.py::test_regexes_rg_refuses_are_clear_errors",
        "tests/stress/test_misbehaviour.py::test_a_handshake_question_is_cancelled_when_its_clients_stream_closes",
        "tests/tools/test_glob.py::test_a_cancelled_glob_stops_within_one_huge_directory",
        "tests/tools/test_glob.py::test_unreadable_directory_is_skipped_and_said",
        "tests/tools/test_grep_fifo.py::test_a_fifo_swapped_in_during_the_walk_never_makes_grep_wait",
        "tests/tools/test_read_guard.py::test_over_stdio_a_read_counts_for_the_process_in_both_eras",
        "tests/tools/test_read_media.py::test_progressive_jpeg_bomb_is_refused_by_what_libjpeg_holds",
        "tests/tools/test_read_media.py::test_progressive_jpegs_within_the_budget_take_turns_at_their_real_cost",
        "tests/tools/test_read_media_region.py::test_a_region_of_a_bomb_is_still_a_bomb",
    }
)
