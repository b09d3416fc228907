/* SPDX-License-Identifier: MIT */
/*
 * pressurectl's commands, one file each; pressurectl.c dispatches to them.
 * Each takes the command's own arguments (argv[0] is the command's name,
 * getopt restarted) and returns the exit status (cli.h).
 */
#pragma once

int cmd_status(int argc, char **argv);          /* status.c */
int cmd_history(int argc, char **argv);         /* history.c */
int cmd_watch(int argc, char **argv);           /* watch.c */
int cmd_protection(int argc, char **argv);      /* protection.c */
int cmd_reclaim(int argc, char **argv);         /* reclaim.c */
int cmd_headroom(int argc, char **argv);         /* headroom.c */
int cmd_inject(int argc, char **argv);          /* inject.c */
int cmd_reload(int argc, char **argv);          /* reload.c */
int cmd_reexec(int argc, char **argv);          /* reexec.c */
int cmd_top(int argc, char **argv);             /* top.c */
int cmd_notify(int argc, char **argv);          /* notify.c */
int cmd_memory_pressure_env(int argc, char **argv); /* memory-pressure-env.c */
