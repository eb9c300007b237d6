/* The side view of a cart and pole, shared by envs/cartpole and envs/cartpole_v1 (the
 * Gymnasium port): the same tiles, palette and geometry for both.
 *
 * Tiles: sky, track, cart, pole, the track's end posts at |x| = 2.4. */
#ifndef CARTPOLE_FRAME_H
#define CARTPOLE_FRAME_H
#include <math.h>
#include <string.h>

enum { CP_SKY = 0, CP_TRACK = 1, CP_CART = 2, CP_POLE = 3, CP_POST = 4 };
#define CP_FRAME_ROWS 9
#define CP_FRAME_COLS 40
#define CP_CART_ROW (CP_FRAME_ROWS - 2)
#define CP_POLE_CELLS 6
#define CP_FRAME_X_EDGE 2.4f  /* the posts: CartPole-v1's x threshold */
/* Columns of lean per row of pole: a terminal cell is about twice as tall as it is wide, and
 * the lean is drawn 2x exaggerated so that angles of a few degrees show. */
#define CP_LEAN_SCALE 4.0f

static inline int cp_clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

static inline void cartpole_frame(float x, float theta, unsigned char* tiles) {
    const int rows = CP_FRAME_ROWS, cols = CP_FRAME_COLS;
    if (tiles == NULL) return;   /* also tells the compiler the fills below have a target */
    memset(tiles, CP_SKY, (size_t)rows * cols);
    memset(tiles + (size_t)(rows - 1) * cols, CP_TRACK, (size_t)cols);
    /* Columns 1 .. cols-2 span x in [-2.4, 2.4]; the posts stand at columns 0 and cols-1. */
    tiles[(rows - 1) * cols] = CP_POST;
    tiles[(rows - 1) * cols + cols - 1] = CP_POST;
    tiles[(rows - 2) * cols] = CP_POST;
    tiles[(rows - 2) * cols + cols - 1] = CP_POST;
    float span = (float)(cols - 3);
    int centre = 1 + (int)lroundf((x + CP_FRAME_X_EDGE) / (2.0f * CP_FRAME_X_EDGE) * span);
    centre = cp_clamp(centre, 2, cols - 3);
    for (int c = centre - 1; c <= centre + 1; c++) tiles[CP_CART_ROW * cols + c] = CP_CART;
    float lean = tanf(theta) * CP_LEAN_SCALE;
    for (int k = 1; k <= CP_POLE_CELLS && CP_CART_ROW - k >= 0; k++) {
        int c = cp_clamp(centre + (int)lroundf(lean * (float)k), 0, cols - 1);
        tiles[(CP_CART_ROW - k) * cols + c] = CP_POLE;
    }
}

#endif
