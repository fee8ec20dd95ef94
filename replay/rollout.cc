#include "replay/rollout.h"
