# SPDX-License-Identifier: Apache-2.0
# docs/acceptance.md's cases under their own names, `ACCEPTANCE.<n>.<short name>` with the label
# `acceptance` (`ctest -L acceptance` runs them all). Each runs the test binary that proves the case
# with a filter naming the tests that prove it; those tests also run under their own names with the
# rest of the suite. Cases 23-31 are registered beside their binaries (tests/controller), and
# 10b in tests/resgroup (it runs once, under its acceptance name: it allocates 9 GiB).

# Inside the sandbox
sealrun_acceptance(1 tiocsti_injects_nothing bwrap_integration_test "BwrapAcceptance.Item1_*")
sealrun_acceptance(2 inherited_fds_do_not_reach_the_job bwrap_integration_test
  "BwrapAcceptance.Item2_*")
sealrun_acceptance(3 read_only_but_for_out bwrap_integration_test "BwrapAcceptance.Item3_*")
sealrun_acceptance(4 no_user_namespaces bwrap_integration_test "BwrapAcceptance.Item4_*")
sealrun_acceptance(5 no_mount_setns_ptrace bwrap_integration_test "BwrapAcceptance.Item5_*")
sealrun_acceptance(6 kernel_attack_surface_denied bwrap_integration_test "BwrapAcceptance.Item6_*")
sealrun_acceptance(7 no_privileges_even_through_setuid bwrap_integration_test
  "BwrapAcceptance.Item7_*")
sealrun_acceptance(8 no_network_no_host_sockets bwrap_integration_test "BwrapAcceptance.Item8_*")
sealrun_acceptance(9 fork_bomb_held_by_the_pids_limit run_integration_test
  "RunTest.ForkBombIsHeldByThePidsLimit*")
sealrun_acceptance(10 oom_kill_named_in_the_receipt run_integration_test
  "RunTest.AllocationPastMemoryMaxIsAnOomKill*")
sealrun_acceptance(11 owned_guard_stops_the_job run_integration_test
  "RunTest.OwnedGrowthGuardStopsTheJobWithExit6")
sealrun_acceptance(12 wall_clock_term_then_kill run_integration_test
  "RunTest.WallClockLimitStopsTheJob")

# Around the controller
sealrun_acceptance(13 sigkill_to_the_controller_then_sweep run_integration_test
  "RunTest.SigkillToTheControllerLeavesNoJobAndSweepCleansUp")
sealrun_acceptance(14 sigterm_stops_the_job_and_writes_the_receipt run_integration_test
  "RunTest.SigtermToTheControllerStopsTheJobAndWritesTheReceipt")
sealrun_acceptance(15 receipt_on_a_full_disk run_integration_test "RunDiskFullTest.*")
sealrun_acceptance(16 same_id_refused run_integration_test
  "RunTest.ASecondRunWithTheSameIdIsRefused*")

# Bad input
sealrun_acceptance(17 hostile_admission_refused admission_integration_test
  "AdmitIntegration.UsageAndRefusalsFromTheCommandLine")
sealrun_acceptance(18 admission_bytes_differ_from_the_sha run_integration_test
  "RunTest.AdmissionBytesThatDifferFromTheShaAreRefusedAndNothingRuns")
sealrun_acceptance(19 escaping_manifest_paths_refused fingerprint_source_test
  "Manifest.ParseRefusesHostileAndMalformedInput:Manifest.PathThroughASymlinkToRoot*:Manifest.RootThatIsASymlinkIsRefused:Manifest.FinalSymlinkIsAMismatch")
sealrun_acceptance(20 tree_loops_fifos_sockets fingerprint_hash_test
  "Tree.SymlinkLoopsAreRecordedNotFollowed:Tree.FifoIsAnError*:Tree.SocketIsAnError*:Tree.RootThatIsASymlinkIsRefused")
sealrun_acceptance(21 one_altered_byte_named admission_integration_test
  "AdmitIntegration.RealInputsCheckCleanAndEachAlteredInputFailsExactlyItsCheck")
sealrun_acceptance(22 no_mechanism_exit_4 run_integration_test
  "RunTest.NoBwrapMeansExit4NamingTheDimensionsAndTheMechanism")

# After the job (second wave), beyond those in tests/controller
sealrun_acceptance(27 source_changed_after_verification run_integration_test
  "RunTest.ASourceChangedOnTheHostDuringTheRunDoesNotReachTheJob")
sealrun_acceptance(33 effective_limit_under_a_parent run_integration_test
  "RunTest.UnderAParentWithALowerLimitTheReceiptNamesTheLimitThatBinds")
sealrun_acceptance(34 enospc_at_the_owned_limit run_owned_space_test
  "OwnedSpaceTest.AWritePastTheLimitFailsWithEnospcAndTheGuardSaysFull:OwnedSpaceTest.TheInodeLimit*")
sealrun_acceptance(32 census_cannot_measure run_integration_test "CensusFailureTest.*")
sealrun_acceptance(36 forged_receipt_fails_with_the_key run_signing_test
  "SignedRunTest.ARunSignsItsReceiptAndAForgeryFailsWithTheKey:SignedRunTest.AnotherKeyOrAnEditedEnvelopeFails")
sealrun_acceptance(35 pinned_tree_swapped_and_host_outside_the_view run_view_test
  "ViewTest.AFileChangedInAPinnedTreeRefusesTheRunNamingIt:Mechanisms/ViewBothMechanisms.AHostFileOutsideThePinnedViewIsNotVisible/*")

# Third wave: a pinned file changed and put back during the job never reaches it (bwrap, podman)
sealrun_acceptance(39 pinned_file_changed_and_restored_during_the_job run_pin_images_test
  "PinImages.AChangeMadeAndUndoneOnTheHostDuringTheJobNeverReachesIt:PinImages.UnderPodmanTooAChangeMadeAndUndoneOnTheHostNeverReachesTheJob")
# Third wave: /out and a writable source (the runner's /src) on the kernel's bound, bwrap and
# podman; through the runner itself: reapi_harness.ResultSpaceBound (tests/remote).
sealrun_acceptance(40 enospc_at_the_result_bound run_result_space_test
  "Mechanisms/ResultSpace.*")
