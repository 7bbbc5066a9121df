/*-------------------------------------------------------------------------
 *
 * settings_pin.h
 *	  The settings a continuous query's batches run with, as its creator
 *	  had them (settings_pin.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_SETTINGS_PIN_H
#define CQ_SETTINGS_PIN_H

#include "postgres.h"

extern Datum cq_settings_pin_capture(void);
extern char *cq_settings_pin_lines(Datum array);
extern void cq_settings_pin_apply(const char *timezone, const char *settings);
extern int	cq_settings_pin_begin(const char *timezone, const char *settings);
extern void cq_settings_pin_end(int nest);
extern char *cq_settings_pin_describe_line(const char *settings);

#endif							/* CQ_SETTINGS_PIN_H */
